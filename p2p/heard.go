package p2p

import (
	"context"
	"sync"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
)

// A held message (see HoldFrom) waits only as long as a forward could still reach someone
// who needs it: gossipsub forwards to the peers of its mesh, less the one it came from
// and those that sent an IDONTWANT for it. Once every peer of the mesh has shown it holds
// the message (an IDONTWANT, or a copy), a forward would send nothing, and the message is
// let go at once; the hold is the longest wait, for a peer that stays silent. In a swarm
// where the publisher reached nearly everyone, that is a round trip instead of the hold.

// Bounds of what the heard tracer keeps.
const (
	// heardMax bounds the message IDs remembered; the oldest is forgotten first (a
	// message whose ID was forgotten is held the whole hold).
	heardMax = 8192
	// heardPerRPC bounds the IDONTWANT IDs taken from one RPC: an honest peer names the
	// messages it just received, a handful.
	heardPerRPC = 64
	// heardPeers bounds the peers noted for one message: its mesh is at most gossipsub's
	// D_hi (12) peers, and any connected peer may send an IDONTWANT.
	heardPeers = 32
)

// heardTracer notes, for each recent message ID, the peers that showed they hold the
// message, from gossipsub's trace events: an IDONTWANT naming it (RecvRPC) or a copy of
// it (DuplicateMessage). Safe for concurrent use.
type heardTracer struct {
	mu    sync.Mutex
	ids   map[string]*heard
	order []string // IDs in the order first noted, for forgetting the oldest
	// held are the records of the messages being held (wait), which forgetting the
	// oldest IDs never drops: a flood of IDONTWANTs naming other IDs cannot make a held
	// message miss the notes it waits for. At most holdSlots a topic.
	held map[string]*heard
}

// heard is what is known of one message: the peers that hold it, and a channel closed
// when one more is noted (then replaced).
type heard struct {
	peers map[peer.ID]struct{}
	wake  chan struct{}
}

var _ pubsub.RawTracer = (*heardTracer)(nil)

func newHeardTracer() *heardTracer {
	return &heardTracer{ids: map[string]*heard{}, held: map[string]*heard{}}
}

// entry returns the record of id, made if new. t.mu is held.
func (t *heardTracer) entry(id string) *heard {
	if h, ok := t.held[id]; ok {
		return h
	}
	if h, ok := t.ids[id]; ok {
		return h
	}
	if len(t.order) >= heardMax {
		delete(t.ids, t.order[0])
		t.order = t.order[1:]
	}
	h := &heard{peers: map[peer.ID]struct{}{}, wake: make(chan struct{})}
	t.ids[id] = h
	t.order = append(t.order, id)
	return h
}

// note records that p holds the message of id.
func (t *heardTracer) note(id string, p peer.ID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	h := t.entry(id)
	if _, ok := h.peers[p]; ok || len(h.peers) >= heardPeers {
		return
	}
	h.peers[p] = struct{}{}
	close(h.wake)
	h.wake = make(chan struct{})
}

// wait returns when every peer of mesh() but from holds the message of id, at until, or
// when ctx ends, whichever comes first. mesh is read again whenever a peer is noted; nil
// waits until until.
func (t *heardTracer) wait(ctx context.Context, id string, from peer.ID, mesh func() []peer.ID, until time.Time) {
	timer := time.NewTimer(time.Until(until))
	defer timer.Stop()
	if mesh == nil {
		select {
		case <-timer.C:
		case <-ctx.Done():
		}
		return
	}
	t.mu.Lock()
	t.held[id] = t.entry(id)
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		delete(t.held, id)
		t.mu.Unlock()
	}()
	for {
		peers := mesh() // before the lock: the mesh tracer has a lock of its own
		t.mu.Lock()
		h := t.held[id]
		missing := false
		for _, p := range peers {
			if _, ok := h.peers[p]; !ok && p != from {
				missing = true
				break
			}
		}
		wake := h.wake
		t.mu.Unlock()
		if !missing {
			return
		}
		select {
		case <-wake:
		case <-timer.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// waiting reports whether a message of id is being held (for tests).
func (t *heardTracer) waiting(id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.held[id]
	return ok
}

func (t *heardTracer) RecvRPC(rpc *pubsub.RPC) { t.dontWant(rpc.From(), rpc.GetControl()) }

// dontWant notes the IDs of ctl's IDONTWANTs, at most heardPerRPC, as held by from.
func (t *heardTracer) dontWant(from peer.ID, ctl *pb.ControlMessage) {
	taken := 0
	for _, idw := range ctl.GetIdontwant() {
		for _, id := range idw.GetMessageIDs() {
			if taken == heardPerRPC {
				return
			}
			taken++
			t.note(id, from)
		}
	}
}

func (t *heardTracer) DuplicateMessage(m *pubsub.Message) {
	id := m.ID
	if id == "" {
		id = MessageID(m.GetData())
	}
	t.note(id, m.ReceivedFrom)
}

func (*heardTracer) OnNewOutboundStream(peer.ID, protocol.ID) {}
func (*heardTracer) OnClosedOutboundStream(peer.ID)           {}
func (*heardTracer) Join(string)                              {}
func (*heardTracer) Leave(string)                             {}
func (*heardTracer) Graft(peer.ID, string)                    {}
func (*heardTracer) Prune(peer.ID, string)                    {}
func (*heardTracer) ValidateMessage(*pubsub.Message)          {}
func (*heardTracer) DeliverMessage(*pubsub.Message)           {}
func (*heardTracer) RejectMessage(*pubsub.Message, string)    {}
func (*heardTracer) ThrottlePeer(peer.ID)                     {}
func (*heardTracer) SendRPC(*pubsub.RPC, peer.ID)             {}
func (*heardTracer) DropRPC(*pubsub.RPC, peer.ID)             {}
func (*heardTracer) UndeliverableMessage(*pubsub.Message)     {}
