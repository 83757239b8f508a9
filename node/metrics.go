package node

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lowband/lowband/p2p"
)

// gossipMetrics counts the gossip validators' results.
type gossipMetrics struct {
	results *prometheus.CounterVec
}

// newGossipMetrics creates the counters and registers them on reg.
func newGossipMetrics(reg prometheus.Registerer) (*gossipMetrics, error) {
	m := &gossipMetrics{results: prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "lowband", Subsystem: "node", Name: "gossip_messages_total",
		Help: "Gossip messages checked by this node's topic validators, by topic kind, result (accept, reject, ignore) and reason.",
	}, []string{"kind", "result", "reason"})}
	if err := reg.Register(m.results); err != nil {
		return nil, fmt.Errorf("registering node metrics: %w", err)
	}
	return m, nil
}

func (m *gossipMetrics) counted(kind string, r p2p.Result, reason string) {
	m.results.WithLabelValues(kind, r.String(), reason).Inc()
}
