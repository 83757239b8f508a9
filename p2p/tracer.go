package p2p

import (
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/prometheus/client_golang/prometheus"
)

// Names of gossipsub's own counters, as its trace events report them.
const (
	// MetricGossipsubMessages counts what gossipsub did with each message from a peer,
	// by topic kind, result and reason: accept (delivered), reject or ignore (with
	// pubsub's reason, such as validation_failed or validation_queue_full), duplicate
	// (seen before) and undeliverable (a subscriber too slow to take it).
	MetricGossipsubMessages = "lowband_p2p_gossipsub_messages_total"
	// MetricGossipsubMeshChanges counts peers grafted onto and pruned from the host's
	// mesh, by topic kind and change (graft, prune).
	MetricGossipsubMeshChanges = "lowband_p2p_gossipsub_mesh_changes_total"
	// MetricGossipsubDroppedRPCs counts RPCs gossipsub dropped instead of sending,
	// because a peer's outbound queue was full.
	MetricGossipsubDroppedRPCs = "lowband_p2p_gossipsub_dropped_rpcs_total"
)

// otherLabel stands for a topic this host did not join or a reason pubsub did not name
// when this was written, so that label sets stay bounded whatever peers send.
const otherLabel = "other"

// pubsubReasons maps pubsub's rejection reasons to a result and a label. What gossipsub
// holds against the forwarder in its score is reject; what it drops without penalty
// (the validator's Ignore, a full or throttled validation queue) is ignore.
var pubsubReasons = map[string][2]string{
	pubsub.RejectBlacklstedPeer:      {"reject", "blacklisted_peer"},
	pubsub.RejectBlacklistedSource:   {"reject", "blacklisted_source"},
	pubsub.RejectMissingSignature:    {"reject", "missing_signature"},
	pubsub.RejectUnexpectedSignature: {"reject", "unexpected_signature"},
	pubsub.RejectUnexpectedAuthInfo:  {"reject", "unexpected_auth_info"},
	pubsub.RejectInvalidSignature:    {"reject", "invalid_signature"},
	pubsub.RejectSelfOrigin:          {"reject", "self_origin"},
	pubsub.RejectValidationFailed:    {"reject", "validation_failed"},
	pubsub.RejectValidationIgnored:   {"ignore", "validation_ignored"},
	pubsub.RejectValidationQueueFull: {"ignore", "validation_queue_full"},
	pubsub.RejectValidationThrottled: {"ignore", "validation_throttled"},
}

// gossipTracer counts gossipsub's raw trace events in Prometheus counters. Messages the
// host published itself are not counted (lowband_p2p_messages_published_total does).
// Safe for concurrent use.
type gossipTracer struct {
	kinds   map[string]string // full topic name -> kind; written only in newGossipTracer
	msgs    *prometheus.CounterVec
	changes *prometheus.CounterVec
	dropped prometheus.Counter
}

var _ pubsub.RawTracer = (*gossipTracer)(nil)

// newGossipTracer makes the counters of the topics of the given kinds and registers them
// on reg when it is not nil (shared with other hosts of the process, as the host's
// metrics are).
func newGossipTracer(network, run string, kinds []string, reg prometheus.Registerer) (*gossipTracer, error) {
	t := &gossipTracer{
		kinds: make(map[string]string, len(kinds)),
		msgs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricGossipsubMessages,
			Help: "Gossip messages from peers as gossipsub handled them, by topic kind, result (accept, reject, ignore, duplicate, undeliverable) and pubsub's reason.",
		}, []string{"kind", "result", "reason"}),
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricGossipsubMeshChanges,
			Help: "Peers grafted onto (graft) and pruned from (prune) this host's gossipsub mesh, by topic kind.",
		}, []string{"kind", "change"}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: MetricGossipsubDroppedRPCs,
			Help: "RPCs gossipsub dropped instead of sending because the peer's outbound queue was full.",
		}),
	}
	for _, k := range kinds {
		t.kinds[TopicName(network, run, k)] = k
	}
	if reg == nil {
		return t, nil
	}
	var err error
	if t.msgs, err = register(reg, t.msgs); err != nil {
		return nil, err
	}
	if t.changes, err = register(reg, t.changes); err != nil {
		return nil, err
	}
	if t.dropped, err = register(reg, t.dropped); err != nil {
		return nil, err
	}
	for _, k := range kinds { // a topic's accepted messages show at 0 before the first one
		t.msgs.WithLabelValues(k, "accept", "")
	}
	return t, nil
}

// kind names the topic by its kind, or otherLabel.
func (t *gossipTracer) kind(topic string) string {
	if k, ok := t.kinds[topic]; ok {
		return k
	}
	return otherLabel
}

func (t *gossipTracer) count(m *pubsub.Message, result, reason string) {
	if m.Local {
		return
	}
	t.msgs.WithLabelValues(t.kind(m.GetTopic()), result, reason).Inc()
}

func (t *gossipTracer) DeliverMessage(m *pubsub.Message)       { t.count(m, "accept", "") }
func (t *gossipTracer) DuplicateMessage(m *pubsub.Message)     { t.count(m, "duplicate", "") }
func (t *gossipTracer) UndeliverableMessage(m *pubsub.Message) { t.count(m, "undeliverable", "") }

func (t *gossipTracer) RejectMessage(m *pubsub.Message, reason string) {
	r, ok := pubsubReasons[reason]
	if !ok {
		r = [2]string{"reject", otherLabel}
	}
	t.count(m, r[0], r[1])
}

func (t *gossipTracer) Graft(_ peer.ID, topic string) {
	t.changes.WithLabelValues(t.kind(topic), "graft").Inc()
}

func (t *gossipTracer) Prune(_ peer.ID, topic string) {
	t.changes.WithLabelValues(t.kind(topic), "prune").Inc()
}

func (t *gossipTracer) DropRPC(*pubsub.RPC, peer.ID) { t.dropped.Inc() }

func (*gossipTracer) OnNewOutboundStream(peer.ID, protocol.ID) {}
func (*gossipTracer) OnClosedOutboundStream(peer.ID)           {}
func (*gossipTracer) Join(string)                              {}
func (*gossipTracer) Leave(string)                             {}
func (*gossipTracer) ValidateMessage(*pubsub.Message)          {}
func (*gossipTracer) ThrottlePeer(peer.ID)                     {}
func (*gossipTracer) RecvRPC(*pubsub.RPC)                      {}
func (*gossipTracer) SendRPC(*pubsub.RPC, peer.ID)             {}
