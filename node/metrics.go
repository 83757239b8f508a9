package node

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lowband/lowband/p2p"
)

// gossipMetrics counts the gossip validators' results.
type gossipMetrics struct {
	results *prometheus.CounterVec
	refused prometheus.Counter // fetch requests refused: the peer was over its budget
}

// newGossipMetrics creates the counters and registers them on reg.
func newGossipMetrics(reg prometheus.Registerer) (*gossipMetrics, error) {
	m := &gossipMetrics{results: prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "lowband", Subsystem: "node", Name: "gossip_messages_total",
		Help: "Gossip messages checked by this node's topic validators, by topic kind, result (accept, reject, ignore) and reason.",
	}, []string{"kind", "result", "reason"})}
	m.refused = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "lowband", Subsystem: "node", Name: "fetch_requests_refused_total",
		Help: "Fetch protocol requests refused because the requesting peer was over its request budget.",
	})
	for _, c := range []prometheus.Collector{m.results, m.refused} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering node metrics: %w", err)
		}
	}
	return m, nil
}

// fetchRefused counts a fetch request refused for its peer's budget (nil m: not counted).
func (m *gossipMetrics) fetchRefused() {
	if m != nil {
		m.refused.Inc()
	}
}

func (m *gossipMetrics) counted(kind string, r p2p.Result, reason string) {
	m.results.WithLabelValues(kind, r.String(), reason).Inc()
}
