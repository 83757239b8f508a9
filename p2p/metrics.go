package p2p

import (
	"errors"
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
	var err error
	if m.pub, err = register(reg, m.pub); err != nil {
		return nil, err
	}
	if m.recv, err = register(reg, m.recv); err != nil {
		return nil, err
	}
	if m.bootstrapFail, err = register(reg, m.bootstrapFail); err != nil {
		return nil, err
	}
	return m, nil
}

// register registers c, or returns the collector already registered under its
// name, so that several hosts in one process may share a registry (their counts add up).
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	if err != nil {
		return c, fmt.Errorf("registering p2p metrics: %w", err)
	}
	return c, nil
}

func (m *metrics) published(kind string) { m.pub.WithLabelValues(kind).Inc() }
func (m *metrics) received(kind string)  { m.recv.WithLabelValues(kind).Inc() }
