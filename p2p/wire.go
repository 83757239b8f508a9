package p2p

import (
	"maps"
	"strings"
	"sync"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"google.golang.org/protobuf/proto"
)

// WireStats breaks down what a host sent and received: stream bytes by protocol (on an
// emulated link, Config.Link, where the host sees its streams' bytes), and gossip by what
// its RPCs carried (each topic's messages, each kind of control message) and how many
// copies of a message arrived after the first (duplicates). It is for benchmarks: the
// caller makes one, passes it as Config.Wire and reads it with Snapshot. Safe for
// concurrent use.
type WireStats struct {
	mu   sync.Mutex
	snap WireSnapshot
}

// WireSnapshot is a copy of a WireStats' counts; the maps are the caller's.
type WireSnapshot struct {
	// Sent and Received are stream bytes by protocol, its network prefix cut
	// (/lowband/<net>/kad/1.0.0 reads kad/1.0.0).
	Sent     map[string]int64 `json:"sent"`
	Received map[string]int64 `json:"received"`
	// Gossip is the bytes of the RPCs the host queued to its peers, by part: "msg <kind>"
	// for a topic's messages, "ihave", "iwant", "graft", "prune", "idontwant" for control
	// messages, "framing" for the rest: each RPC's protobuf framing and the subscription
	// changes it carries (in a settled swarm nearly all framing). GossipMsgs counts the message copies sent
	// by topic kind.
	Gossip     map[string]int64 `json:"gossip"`
	GossipMsgs map[string]int64 `json:"gossip_msgs"`
	// Duplicates counts the messages from peers already seen, by topic kind, and
	// DuplicateBytes their bytes.
	Duplicates     map[string]int64 `json:"duplicates"`
	DuplicateBytes map[string]int64 `json:"duplicate_bytes"`
	// Served is the bytes of the answers the host's protocol handlers gave, by what the
	// handler says was asked (Served): request kinds of a protocol the host's user serves.
	Served map[string]int64 `json:"served"`
}

// Snapshot copies the counts.
func (w *WireStats) Snapshot() WireSnapshot {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.snap
	return WireSnapshot{Sent: maps.Clone(s.Sent), Received: maps.Clone(s.Received), Gossip: maps.Clone(s.Gossip),
		GossipMsgs: maps.Clone(s.GossipMsgs), Duplicates: maps.Clone(s.Duplicates), DuplicateBytes: maps.Clone(s.DuplicateBytes),
		Served: maps.Clone(s.Served)}
}

// Add adds o's counts to s, making s's maps as needed.
func (s *WireSnapshot) Add(o WireSnapshot) {
	add := func(dst *map[string]int64, src map[string]int64) {
		if *dst == nil {
			*dst = map[string]int64{}
		}
		for k, v := range src {
			(*dst)[k] += v
		}
	}
	add(&s.Sent, o.Sent)
	add(&s.Received, o.Received)
	add(&s.Gossip, o.Gossip)
	add(&s.GossipMsgs, o.GossipMsgs)
	add(&s.Duplicates, o.Duplicates)
	add(&s.DuplicateBytes, o.DuplicateBytes)
	add(&s.Served, o.Served)
}

// Served counts n bytes of an answer to a request of the given kind; a nil w counts
// nothing.
func (w *WireStats) Served(kind string, n int) {
	if w == nil || n <= 0 {
		return
	}
	w.add(&w.snap.Served, kind, int64(n))
}

func (w *WireStats) add(m *map[string]int64, k string, n int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if *m == nil {
		*m = map[string]int64{}
	}
	(*m)[k] += n
}

// stream counts n stream bytes of protocol pid, sent or received; a nil w counts nothing.
func (w *WireStats) stream(pid protocol.ID, sent bool, n int) {
	if w == nil || n <= 0 {
		return
	}
	name := string(pid)
	if rest, ok := strings.CutPrefix(name, "/lowband/"); ok {
		if _, after, ok := strings.Cut(rest, "/"); ok {
			name = after
		}
	}
	if sent {
		w.add(&w.snap.Sent, name, int64(n))
	} else {
		w.add(&w.snap.Received, name, int64(n))
	}
}

// wireTracer feeds a WireStats from gossipsub's trace events.
type wireTracer struct {
	w     *WireStats
	kinds map[string]string // full topic name -> kind
}

var _ pubsub.RawTracer = (*wireTracer)(nil)

func (t *wireTracer) kind(topic string) string {
	if k, ok := t.kinds[topic]; ok {
		return k
	}
	return otherLabel
}

func (t *wireTracer) SendRPC(rpc *pubsub.RPC, _ peer.ID) {
	total := int64(proto.Size(&rpc.RPC))
	for _, m := range rpc.Publish {
		n := int64(proto.Size(m))
		total -= n
		k := t.kind(m.GetTopic())
		t.w.add(&t.w.snap.Gossip, "msg "+k, n)
		t.w.add(&t.w.snap.GossipMsgs, k, 1)
	}
	if c := rpc.Control; c != nil {
		for name, n := range map[string]int{
			"ihave": sizes(c.Ihave), "iwant": sizes(c.Iwant), "graft": sizes(c.Graft),
			"prune": sizes(c.Prune), "idontwant": sizes(c.Idontwant),
		} {
			if n > 0 {
				t.w.add(&t.w.snap.Gossip, name, int64(n))
				total -= int64(n)
			}
		}
	}
	if total > 0 {
		t.w.add(&t.w.snap.Gossip, "framing", total)
	}
}

// sizes is the encoded size of protobuf messages.
func sizes[M proto.Message](ms []M) int {
	n := 0
	for _, m := range ms {
		n += proto.Size(m)
	}
	return n
}

func (t *wireTracer) DuplicateMessage(m *pubsub.Message) {
	k := t.kind(m.GetTopic())
	t.w.add(&t.w.snap.Duplicates, k, 1)
	t.w.add(&t.w.snap.DuplicateBytes, k, int64(len(m.GetData())))
}

func (*wireTracer) Join(string)                              {}
func (*wireTracer) Leave(string)                             {}
func (*wireTracer) Graft(peer.ID, string)                    {}
func (*wireTracer) Prune(peer.ID, string)                    {}
func (*wireTracer) ValidateMessage(*pubsub.Message)          {}
func (*wireTracer) DeliverMessage(*pubsub.Message)           {}
func (*wireTracer) RejectMessage(*pubsub.Message, string)    {}
func (*wireTracer) ThrottlePeer(peer.ID)                     {}
func (*wireTracer) RecvRPC(*pubsub.RPC)                      {}
func (*wireTracer) DropRPC(*pubsub.RPC, peer.ID)             {}
func (*wireTracer) UndeliverableMessage(*pubsub.Message)     {}
func (*wireTracer) OnNewOutboundStream(peer.ID, protocol.ID) {}
func (*wireTracer) OnClosedOutboundStream(peer.ID)           {}
