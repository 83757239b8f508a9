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
	lookups       prometheus.Counter
	refreshes     prometheus.Counter
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
		lookups: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "lowband", Subsystem: "p2p", Name: "rendezvous_lookups_total",
			Help: "Lookups of the run's rendezvous in the DHT, made while the host seeks peers.",
		}),
		refreshes: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "lowband", Subsystem: "p2p", Name: "routing_table_refreshes_total",
			Help: "Refreshes of the DHT routing table (a lookup of the host's own key and of each stale bucket).",
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
	if m.lookups, err = register(reg, m.lookups); err != nil {
		return nil, err
	}
	if m.refreshes, err = register(reg, m.refreshes); err != nil {
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

// hostCollector exports the host's connected peers, its DHT routing table size and its
// wire bytes (every protocol, as Bandwidth counts them) and its reconnections after a
// peer's dead connection (reconnect.go), read when scraped.
type hostCollector struct {
	h                              *Host
	peers, table, sent, rcv, stale *prometheus.Desc
}

func newHostCollector(h *Host) *hostCollector {
	desc := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName("lowband", "p2p", name), help, nil, nil)
	}
	return &hostCollector{
		h:     h,
		peers: desc("peers", "Peers this host is connected to."),
		table: desc("routing_table_peers", "Peers in this host's DHT routing table."),
		sent:  desc("wire_sent_bytes_total", "Bytes this host sent on every protocol and connection."),
		rcv:   desc("wire_received_bytes_total", "Bytes this host received on every protocol and connection."),
		stale: desc("stale_reconnects_total", "Reconnections to a peer that connected again while its older connection no longer answered (a restarted process)."),
	}
}

func (c *hostCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.peers
	ch <- c.table
	ch <- c.sent
	ch <- c.rcv
	ch <- c.stale
}

func (c *hostCollector) Collect(ch chan<- prometheus.Metric) {
	sent, rcv := c.h.Bandwidth()
	ch <- prometheus.MustNewConstMetric(c.peers, prometheus.GaugeValue, float64(len(c.h.h.Network().Peers())))
	ch <- prometheus.MustNewConstMetric(c.table, prometheus.GaugeValue, float64(c.h.RoutingTableSize()))
	ch <- prometheus.MustNewConstMetric(c.sent, prometheus.CounterValue, float64(sent))
	ch <- prometheus.MustNewConstMetric(c.rcv, prometheus.CounterValue, float64(rcv))
	ch <- prometheus.MustNewConstMetric(c.stale, prometheus.CounterValue, float64(c.h.StaleConnsClosed()))
}
