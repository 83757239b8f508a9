package node

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// ckptMetrics counts checkpoints made and synced. A nil *ckptMetrics counts nothing.
type ckptMetrics struct {
	made    prometheus.Counter
	syncs   *prometheus.CounterVec // by result: ok, failed
	dropped *prometheus.CounterVec // by reason: stalled, garbage, missing
	bytes   prometheus.Counter
}

// newCkptMetrics creates the counters and registers them on reg.
func newCkptMetrics(reg prometheus.Registerer) (*ckptMetrics, error) {
	m := &ckptMetrics{
		made: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "lowband", Subsystem: "node", Name: "checkpoints_made_total",
			Help: "Checkpoints this node made and stored.",
		}),
		syncs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "lowband", Subsystem: "node", Name: "checkpoint_syncs_total",
			Help: "Checkpoint syncs by result (ok, failed).",
		}, []string{"result"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "lowband", Subsystem: "node", Name: "checkpoint_peers_dropped_total",
			Help: "Peers dropped from a checkpoint sync, by reason: stalled, garbage (bytes that are not what was asked for), missing.",
		}, []string{"reason"}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "lowband", Subsystem: "node", Name: "checkpoint_fetched_bytes_total",
			Help: "Bytes of manifests and chunks fetched by checkpoint syncs.",
		}),
	}
	for _, r := range []string{"ok", "failed"} {
		m.syncs.WithLabelValues(r)
	}
	for _, r := range []string{dropStalled, dropGarbage, dropMissing} {
		m.dropped.WithLabelValues(r)
	}
	for _, c := range []prometheus.Collector{m.made, m.syncs, m.dropped, m.bytes} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering checkpoint metrics: %w", err)
		}
	}
	return m, nil
}

func (m *ckptMetrics) madeOne() {
	if m != nil {
		m.made.Inc()
	}
}

func (m *ckptMetrics) synced(result string) {
	if m != nil {
		m.syncs.WithLabelValues(result).Inc()
	}
}

func (m *ckptMetrics) droppedPeer(reason string) {
	if m != nil {
		m.dropped.WithLabelValues(reason).Inc()
	}
}

func (m *ckptMetrics) fetched(n int) {
	if m != nil {
		m.bytes.Add(float64(n))
	}
}
