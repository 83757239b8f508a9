package p2p

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the host's own Prometheus metrics, next to go-libp2p's.
type metrics struct {
	pub, recv     *prometheus.CounterVec
	bootstrapFail prometheus.Counter
}

// newMetrics creates the host's metrics and registers them on reg when it is not nil.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		pub: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "lowband", Subsystem: "p2p", Name: "messages_published_total",
			Help: "Gossip messages published by this host, by topic kind.",
		}, []string{"kind"}),
		recv: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "lowband", Subsystem: "p2p", Name: "messages_received_total",
			Help: "Gossip messages from other peers delivered to this host's subscribers, by topic kind.",
		}, []string{"kind"}),
		bootstrapFail: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "lowband", Subsystem: "p2p", Name: "bootstrap_failed_rounds_total",
			Help: "Rounds in which no bootstrap or cached peer answered.",
		}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.pub, m.recv, m.bootstrapFail} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering p2p metrics: %w", err)
		}
	}
	return m, nil
}

func (m *metrics) published(kind string) { m.pub.WithLabelValues(kind).Inc() }
func (m *metrics) received(kind string)  { m.recv.WithLabelValues(kind).Inc() }
