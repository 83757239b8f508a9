package p2p

import (
	"slices"
	"sync"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/prometheus/client_golang/prometheus"
)

// Names of the gauges that say how far each topic's gossip has formed, by topic kind.
const (
	MetricTopicPeers = "lowband_p2p_gossip_topic_peers" // peers known to be subscribed to the topic
	MetricMeshPeers  = "lowband_p2p_gossip_mesh_peers"  // peers in this host's gossipsub mesh of the topic
)

// MeshDegreeLow is gossipsub's lower mesh degree D_lo: a host whose mesh of a topic it
// subscribes to or relays has fewer peers grafts more, up to the degree D, at its next
// heartbeat (once a second), when it knows that many subscribers. A mesh between D_lo
// and D_hi is left as it is.
var MeshDegreeLow = pubsub.DefaultGossipSubParams().Dlo

// MeshDegree is gossipsub's mesh degree D, what it grafts a mesh below D_lo up to.
var MeshDegree = pubsub.DefaultGossipSubParams().D

// meshTracer follows gossipsub's mesh from the router's raw trace events: Graft and
// Prune per topic, a closed stream (the peer left) and Leave. Gossipsub keeps its mesh
// private; this is its public view. Safe for concurrent use.
type meshTracer struct {
	mu     sync.Mutex
	joined map[string]bool
	mesh   map[string]map[peer.ID]struct{}
}

var _ pubsub.RawTracer = (*meshTracer)(nil)

func newMeshTracer() *meshTracer {
	return &meshTracer{joined: map[string]bool{}, mesh: map[string]map[peer.ID]struct{}{}}
}

// size returns the mesh size of topic, and false when the tracer never saw it joined
// (it is not wired to gossipsub, or the topic is not joined).
func (t *meshTracer) size(topic string) (int, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.mesh[topic]), t.joined[topic]
}

// peers lists the mesh of topic, sorted.
func (t *meshTracer) peers(topic string) []peer.ID {
	t.mu.Lock()
	out := make([]peer.ID, 0, len(t.mesh[topic]))
	for p := range t.mesh[topic] {
		out = append(out, p)
	}
	t.mu.Unlock()
	slices.Sort(out)
	return out
}

func (t *meshTracer) Join(topic string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.joined[topic] = true
}

func (t *meshTracer) Leave(topic string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.joined, topic)
	delete(t.mesh, topic)
}

func (t *meshTracer) Graft(p peer.ID, topic string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.mesh[topic] == nil {
		t.mesh[topic] = map[peer.ID]struct{}{}
	}
	t.mesh[topic][p] = struct{}{}
}

func (t *meshTracer) Prune(p peer.ID, topic string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.mesh[topic], p)
}

func (t *meshTracer) OnClosedOutboundStream(p peer.ID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, m := range t.mesh {
		delete(m, p)
	}
}

func (*meshTracer) OnNewOutboundStream(peer.ID, protocol.ID) {}
func (*meshTracer) ValidateMessage(*pubsub.Message)          {}
func (*meshTracer) DeliverMessage(*pubsub.Message)           {}
func (*meshTracer) RejectMessage(*pubsub.Message, string)    {}
func (*meshTracer) DuplicateMessage(*pubsub.Message)         {}
func (*meshTracer) ThrottlePeer(peer.ID)                     {}
func (*meshTracer) RecvRPC(*pubsub.RPC)                      {}
func (*meshTracer) SendRPC(*pubsub.RPC, peer.ID)             {}
func (*meshTracer) DropRPC(*pubsub.RPC, peer.ID)             {}
func (*meshTracer) UndeliverableMessage(*pubsub.Message)     {}

// MeshPeers is the size of this host's gossipsub mesh of the topic of the given kind;
// false when the host is in no mesh of that topic (it neither subscribes to nor relays
// it) or the mesh tracer is not wired to gossipsub.
func (h *Host) MeshPeers(kind string) (int, bool) {
	if h.mesh == nil {
		return 0, false
	}
	return h.mesh.size(TopicName(h.cfg.Network, h.cfg.Run, kind))
}

// MeshPeerIDs lists the peers in this host's gossipsub mesh of the topic of the given
// kind, sorted; nil when the host is in no mesh of it (see MeshPeers).
func (h *Host) MeshPeerIDs(kind string) []peer.ID {
	if h.mesh == nil {
		return nil
	}
	return h.mesh.peers(TopicName(h.cfg.Network, h.cfg.Run, kind))
}

// topicCollector exports how many peers each topic has (TopicPeers) and the mesh size
// (MeshPeers, when known) as gauges, read when scraped.
type topicCollector struct {
	h          *Host
	topic, msh *prometheus.Desc
}

func newTopicCollector(h *Host) *topicCollector {
	return &topicCollector{
		h: h,
		topic: prometheus.NewDesc(MetricTopicPeers,
			"Peers this host knows to be subscribed to the topic, by topic kind.", []string{"kind"}, nil),
		msh: prometheus.NewDesc(MetricMeshPeers,
			"Peers in this host's gossipsub mesh of the topic, by topic kind.", []string{"kind"}, nil),
	}
}

func (c *topicCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.topic; ch <- c.msh }

func (c *topicCollector) Collect(ch chan<- prometheus.Metric) {
	for _, kind := range c.h.cfg.Topics {
		ch <- prometheus.MustNewConstMetric(c.topic, prometheus.GaugeValue, float64(len(c.h.TopicPeers(kind))), kind)
		if n, ok := c.h.MeshPeers(kind); ok {
			ch <- prometheus.MustNewConstMetric(c.msh, prometheus.GaugeValue, float64(n), kind)
		}
	}
}
