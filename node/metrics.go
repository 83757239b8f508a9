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
	// served and servedBytes count the fetch requests answered with an object, and its
	// bytes, by request kind (fetchKindNames).
	served, servedBytes *prometheus.CounterVec
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
	m.served = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "lowband", Subsystem: "node", Name: "fetch_served_total",
		Help: "Fetch protocol requests this node answered with an object, by request kind.",
	}, []string{"kind"})
	m.servedBytes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "lowband", Subsystem: "node", Name: "fetch_served_bytes_total",
		Help: "Bytes of the objects this node served over the fetch protocol, by request kind.",
	}, []string{"kind"})
	for _, c := range []prometheus.Collector{m.results, m.refused, m.served, m.servedBytes} {
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

// fetchServed counts an object of n bytes served for a request of kind (nil m: not
// counted).
func (m *gossipMetrics) fetchServed(kind byte, n int) {
	if m == nil || n == 0 {
		return
	}
	name := fetchKindNames[kind]
	if name == "" {
		return
	}
	m.served.WithLabelValues(name).Inc()
	m.servedBytes.WithLabelValues(name).Add(float64(n))
}

func (m *gossipMetrics) counted(kind string, r p2p.Result, reason string) {
	m.results.WithLabelValues(kind, r.String(), reason).Inc()
}
