package p2p

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/peer"
)

// Result is a topic validator's decision on one message.
type Result int

// Results. Reject drops the message and counts against the peer that forwarded it in
// gossipsub's score; Ignore drops it without penalty. Either way the message ID (the
// content hash) stays in gossipsub's seen cache, so the same bytes are never validated
// or delivered again: a message that cannot be decided yet must be kept by the caller,
// not ignored in the hope of a second delivery.
const (
	Accept Result = iota
	Reject
	Ignore
)

func (r Result) String() string {
	switch r {
	case Accept:
		return "accept"
	case Ignore:
		return "ignore"
	default:
		return "reject"
	}
}

func (r Result) pubsub() pubsub.ValidationResult {
	switch r {
	case Accept:
		return pubsub.ValidationAccept
	case Ignore:
		return pubsub.ValidationIgnore
	default:
		return pubsub.ValidationReject
	}
}

// Validator decides on a gossip message from its bytes alone. Messages carry no author
// (see the package doc), so a validator never learns who published a message, and must not
// judge the same bytes differently by who sent them. forwarder is the neighbour that
// delivered this copy (the host itself for its own publishes): it is there for accounting
// only, such as charging a message kept for later to the neighbour that sent it, never for
// the verdict. A validator runs concurrently for different messages, must be safe for
// concurrent use, must respect ctx, and must not keep data after it returns.
type Validator func(ctx context.Context, forwarder peer.ID, data []byte) Result

// topic is one joined topic and its current validator.
type topic struct {
	t     *pubsub.Topic
	val   atomic.Pointer[Validator]
	holds chan struct{} // messages held at once (holdSlots)
}

// MessageIDSize is the length of a message ID: the first 20 bytes of the payload's
// SHA-256, as Ethereum's consensus gossip does. Each ID is sent again and again in
// gossipsub's IHAVE and IDONTWANT control messages (about a tenth of a node's bytes);
// 160 bits leave a collision, which would drop one of two messages as seen, out of reach
// (2^80 tries for a pair of one's own, 2^160 to match another's message).
const MessageIDSize = 20

// MessageID is gossipsub's message ID: the first MessageIDSize bytes of the payload's
// SHA-256. The same bytes published twice, by one host or by two, are one message.
func MessageID(data []byte) string {
	sum := sha256.Sum256(data)
	return string(sum[:MessageIDSize])
}

// Duplicate suppression. Gossipsub sends a message a node receives to every peer of its
// mesh, and its publisher sends it to every peer of the topic at once (flood publish). In
// a swarm where most nodes are connected to one another, nearly every node then has the
// message from its publisher, and every forward is a duplicate: in a 16-node swarm each
// 6 KB shard crossed the wire about 130 times, not 16. Gossipsub's IDONTWANT (a node tells
// its mesh as soon as a message arrives, before checking it) spares a peer only if it
// comes before the forward does, and a forward follows the check within milliseconds,
// while an IDONTWANT takes one link's latency. So a message of HoldFrom bytes or more
// from a peer is forwarded and delivered once every peer of the topic's mesh but its
// sender has shown it holds the message (an IDONTWANT or a copy: heardTracer), at most
// ForwardHold after its check began: a forward then goes only to those that have not.
// Where the publisher reached nearly everyone, that is about a round trip; a message
// some mesh peer still needs costs its hop ForwardHold, which the round's deadlines
// dwarf. The node's own publishes are not held.
const (
	// HoldFrom is the size from which messages are held, and gossipsub's IDONTWANT
	// threshold. An IDONTWANT costs about 30 bytes a mesh peer (a 20-byte message ID),
	// and where most forwards are duplicates it spares nearly one message a mesh peer;
	// smaller messages cost less than the IDONTWANTs that would spare them. A vote
	// reference (about 200 bytes) is above it.
	HoldFrom = 128
	// holdSlots bounds the messages of one topic held at once. A held message keeps one
	// of gossipsub's validation places of its topic (1,024) for the hold, and a message
	// that finds none is dropped and never validated again (it is marked seen): past
	// holdSlots, messages go on at once, as duplicates at worst, never lost.
	holdSlots = 256
	// DefaultForwardHold covers the neighbour's latency from the publisher plus its
	// IDONTWANT's back, a few hundred ms between continents, with room for a busy host's
	// event loop: on 2 cores running 16 nodes and their training, a hold of 200 ms let a
	// quarter of the duplicates through, 500 ms about a tenth (14 duplicate shards a node
	// and round), 1 s about one in a hundred (1.3 to 2.4, in bursts of up to 6.5 in a
	// round). Of the mesh peers a 1 s hold gave up on, most showed they held the message
	// within 350 ms after, a few up to 1 s: their event loops were late, not the links.
	// The node's own loop is not held: the validator hands it the message before the
	// hold. A message every mesh peer holds goes on sooner; the hold is paid in full
	// only on a hop to a peer that needs the forward, which the round's deadlines dwarf.
	DefaultForwardHold = 2 * time.Second
)

// GossipHistory is how many heartbeats' messages an IHAVE names: gossipsub's default
// HistoryGossip, 3. With 1 (each ID sent once to the D_lazy peers outside the mesh a
// heartbeat picks), a node's IHAVE bytes in a 16-node swarm fell from 17-20 KB to 7-9 KB
// a round. But IHAVE is how a node that lost messages (a full queue to a slow peer drops
// them) gets them back, and in a 100-node swarm on 2 cores, 23 of the 100 nodes fell
// behind within 6 minutes and did not catch up; with 3, one to three trailed (one run
// each: suggestive, not conclusive). The default stays.
const GossipHistory = 3

// GossipLazy is gossipsub's D_lazy: the fewest peers outside the mesh a heartbeat sends
// IHAVE to (GossipFactor, a quarter of them, when more). Gossipsub's default is 6. In a
// small swarm every peer outside the mesh got each message from its publisher already
// (flood publish), and the minimum alone decides what IHAVE costs: in a 16-node swarm, 7
// peers outside a mesh of 8, 6 of them named each ID in 3 heartbeats (17-20 KB a node and
// round), 3 of them 7-9 KB of the node's 115-120 KB, 2 of them two thirds of that. From
// about 21 nodes (a mesh of 8) a quarter of the peers outside the mesh is 3 or more, so
// this changes nothing there, where IHAVE is how a node that lost messages
// gets them back; in a smaller one the publisher sent every peer each message, and a lost
// shard is fetched (the round asks for the slots it misses).
const GossipLazy = 2

func (h *Host) startGossip() error {
	params := pubsub.DefaultGossipSubParams()
	params.IDontWantMessageThreshold = HoldFrom
	params.HistoryGossip = GossipHistory
	params.Dlazy = GossipLazy
	opts := []pubsub.Option{
		pubsub.WithGossipSubParams(params),
		pubsub.WithMessageSignaturePolicy(pubsub.StrictNoSign),
		pubsub.WithNoAuthor(),
		pubsub.WithMessageIdFn(func(m *pb.Message) string { return MessageID(m.GetData()) }),
		pubsub.WithFloodPublish(true),
		pubsub.WithPeerExchange(h.cfg.PeerExchange),
		pubsub.WithPeerScore(h.scoreParams(), &scoreThresholds),
		pubsub.WithPeerScoreInspect(pubsub.PeerScoreInspectFn(h.scores.inspect), scoreInspectInterval),
		pubsub.WithMaxMessageSize(pubsub.DefaultMaxMessageSize),
		pubsub.WithRawTracer(h.mesh),
		pubsub.WithRawTracer(h.heard),
		pubsub.WithRawTracer(h.traced),
	}
	if h.cfg.Wire != nil {
		opts = append(opts, pubsub.WithRawTracer(&wireTracer{w: h.cfg.Wire, kinds: h.traced.kinds}))
	}
	ps, err := pubsub.NewGossipSub(h.ctx, h.h, opts...)
	if err != nil {
		return fmt.Errorf("starting gossipsub: %w", err)
	}
	h.ps = ps
	h.topics = make(map[string]*topic, len(h.cfg.Topics))
	for _, kind := range h.cfg.Topics {
		if err := h.join(kind); err != nil {
			return err
		}
	}
	return nil
}

// join registers the topic's validator, then joins the topic and, on a relaying host,
// relays it: no message of the topic is ever handled before its validator is in place.
func (h *Host) join(kind string) error {
	tp := &topic{holds: make(chan struct{}, holdSlots)}
	v := h.cfg.Validators[kind]
	tp.val.Store(&v)
	name := TopicName(h.cfg.Network, h.cfg.Run, kind)
	self := h.h.ID()
	val := func(ctx context.Context, from peer.ID, m *pubsub.Message) pubsub.ValidationResult {
		began := time.Now()
		r := (*tp.val.Load())(ctx, from, m.GetData())
		if r == Accept && from != self && h.cfg.ForwardHold > 0 && len(m.GetData()) >= HoldFrom {
			select {
			case tp.holds <- struct{}{}:
				mesh := func() []peer.ID { return h.mesh.peers(name) }
				if h.cfg.HoldWhole {
					mesh = nil
				}
				h.heard.wait(ctx, MessageID(m.GetData()), from, mesh, began.Add(h.cfg.ForwardHold))
				<-tp.holds
			default:
			}
		}
		return r.pubsub()
	}
	if err := h.ps.RegisterTopicValidator(name, pubsub.ValidatorEx(val)); err != nil {
		return fmt.Errorf("registering %s validator: %w", kind, err)
	}
	t, err := h.ps.Join(name)
	if err != nil {
		return fmt.Errorf("joining %s topic: %w", kind, err)
	}
	tp.t = t
	h.topics[kind] = tp
	if h.cfg.PeerExchange {
		r, err := t.Relay()
		if err != nil {
			return fmt.Errorf("relaying %s topic: %w", kind, err)
		}
		h.relays = append(h.relays, r)
	}
	return nil
}

// Topics lists the full names of the joined topics, sorted.
func (h *Host) Topics() []string {
	out := make([]string, 0, len(h.topics))
	for _, t := range h.topics {
		out = append(out, t.t.String())
	}
	slices.Sort(out)
	return out
}

func (h *Host) topic(kind string) (*topic, error) {
	t, ok := h.topics[kind]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownTopic, kind)
	}
	return t, nil
}

// Publish sends data on the topic of the given kind. Data over MaxMessageSize is
// refused with ErrMessageTooLarge. It may block while the local validator runs.
func (h *Host) Publish(ctx context.Context, kind string, data []byte) error {
	if len(data) > MaxMessageSize {
		return fmt.Errorf("publishing %d bytes on %s: %w (%d)", len(data), kind, ErrMessageTooLarge, MaxMessageSize)
	}
	t, err := h.topic(kind)
	if err != nil {
		return err
	}
	if h.ctx.Err() != nil {
		return ErrClosed
	}
	if err := t.t.Publish(ctx, data); err != nil {
		return fmt.Errorf("publishing on %s: %w", kind, err)
	}
	h.met.published(kind)
	return nil
}

// Message is one gossip message delivered to a subscriber.
// Messages carry no author: whoever published the bytes first is not recorded, and
// ReceivedFrom is only the neighbour that forwarded them.
type Message struct {
	ReceivedFrom peer.ID // the peer that forwarded it (the host itself for its own messages)
	Data         []byte  // the payload; the caller owns it
	Local        bool    // published by this host
}

// Subscription receives the messages of one topic that passed validation,
// including the host's own.
type Subscription struct {
	h    *Host
	kind string
	sub  *pubsub.Subscription
}

// Subscribe starts receiving the topic of the given kind.
func (h *Host) Subscribe(kind string) (*Subscription, error) {
	t, err := h.topic(kind)
	if err != nil {
		return nil, err
	}
	sub, err := t.t.Subscribe()
	if err != nil {
		return nil, fmt.Errorf("subscribing to %s: %w", kind, err)
	}
	return &Subscription{h: h, kind: kind, sub: sub}, nil
}

// Next blocks until a message arrives, ctx ends, or the subscription or host is
// closed (ErrClosed).
func (s *Subscription) Next(ctx context.Context) (*Message, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(s.h.ctx, cancel)
	defer stop()
	m, err := s.sub.Next(ctx)
	if err != nil {
		if s.h.ctx.Err() != nil || errors.Is(err, pubsub.ErrSubscriptionCancelled) {
			return nil, ErrClosed
		}
		return nil, err
	}
	local := m.ReceivedFrom == s.h.h.ID()
	if !local {
		s.h.met.received(s.kind)
	}
	return &Message{ReceivedFrom: m.ReceivedFrom, Data: m.GetData(), Local: local}, nil
}

// Cancel stops the subscription; Next then returns ErrClosed.
func (s *Subscription) Cancel() { s.sub.Cancel() }

// SetValidator replaces the validator of the topic of the given kind. The switch is
// atomic: every message is checked by either the old or the new validator, never by
// none. Rejected and ignored messages reach no subscriber and are not forwarded.
func (h *Host) SetValidator(kind string, v Validator) error {
	if v == nil {
		return fmt.Errorf("%s validator: %w", kind, ErrNoValidator)
	}
	t, err := h.topic(kind)
	if err != nil {
		return err
	}
	t.val.Store(&v)
	return nil
}

// SetAppScore swaps the gossipsub application score function; nil scores every
// peer 0. f is called from gossipsub's goroutines and must be safe for concurrent use.
func (h *Host) SetAppScore(f func(peer.ID) float64) {
	if f == nil {
		h.appScore.Store(nil)
		return
	}
	h.appScore.Store(&f)
}

func (h *Host) appScoreOf(p peer.ID) float64 {
	var s float64
	if f := h.appScore.Load(); f != nil {
		s = (*f)(p)
	}
	if slices.ContainsFunc(h.cfg.Bootstrap, func(b peer.AddrInfo) bool { return b.ID == p }) {
		s += bootstrapScore
	}
	return s
}

// TopicPeers lists the peers known to be subscribed to the topic of the given
// kind, sorted; nil if the kind is not joined.
func (h *Host) TopicPeers(kind string) []peer.ID {
	t, ok := h.topics[kind]
	if !ok {
		return nil
	}
	ids := t.t.ListPeers()
	slices.Sort(ids)
	return ids
}
