package node

import (
	"fmt"
	"runtime"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lowband/lowband/node/core"
)

// progressMetrics are the Prometheus metrics of the node's rounds.
type progressMetrics struct {
	closedRounds prometheus.Counter
	loss         prometheus.Gauge
	included     prometheus.Counter
	rejected     *prometheus.CounterVec
	contribution prometheus.Counter
	stall        prometheus.Counter
	late         prometheus.Counter
}

func newProgressMetrics(reg prometheus.Registerer, g gauges) (*progressMetrics, error) {
	opts := func(name, help string) prometheus.Opts {
		return prometheus.Opts{Namespace: "lowband", Subsystem: "round", Name: name, Help: help}
	}
	m := &progressMetrics{
		closedRounds: prometheus.NewCounter(prometheus.CounterOpts(opts("closed_total", "Rounds this node closed."))),
		loss:         prometheus.NewGauge(prometheus.GaugeOpts(opts("loss", "Held-out loss of the model after the last scored round."))),
		included:     prometheus.NewCounter(prometheus.CounterOpts(opts("contributions_included_total", "Contributions aggregated, summed over closed rounds."))),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts(opts("contributions_rejected_total",
			"Contributions left out at close, by reason (incomplete, jailed, weight, decode, cap, equivocation).")), []string{"reason"}),
		contribution: prometheus.NewCounter(prometheus.CounterOpts(opts("contribution_bytes_total", "Bytes of this node's own signed shards."))),
		stall:        prometheus.NewCounter(prometheus.CounterOpts(opts("stall_seconds_total", "Seconds local work waited for a round to close."))),
		late: prometheus.NewCounter(prometheus.CounterOpts(opts("local_late_total",
			"Rounds whose local work this node dropped because its peers had closed them: it is slower than they are."))),
	}
	for _, r := range rejectReasons {
		m.rejected.WithLabelValues(r) // served at 0 until the first rejection
	}
	node := func(name, help string) prometheus.GaugeOpts {
		return prometheus.GaugeOpts{Namespace: "lowband", Subsystem: "node", Name: name, Help: help}
	}
	cs := []prometheus.Collector{m.closedRounds, m.loss, m.included, m.rejected, m.contribution, m.stall, m.late,
		prometheus.NewCounterFunc(prometheus.CounterOpts(node("verify_seconds_total", "CPU seconds spent verifying gossip.")), func() float64 { return g.verifyCPU().Seconds() }),
		prometheus.NewGaugeFunc(node("inbox_depth", "Verified events waiting for the round loop."), func() float64 { return float64(g.inbox()) }),
		prometheus.NewGaugeFunc(node("stash_depth", "Shards kept until their bundle arrives."), func() float64 { return float64(g.stash()) }),
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering round metrics: %w", err)
		}
	}
	return m, nil
}

// rejectReasons are the reasons core gives for leaving a contribution out of a round.
var rejectReasons = []string{core.ReasonIncomplete, core.ReasonJailed, core.ReasonWeight,
	core.ReasonDecode, core.ReasonCap, core.ReasonEquivocation}

func (m *progressMetrics) closed(r RoundStatus) {
	m.closedRounds.Inc()
	m.included.Add(float64(len(r.Included)))
	for reason, n := range r.Rejected {
		m.rejected.WithLabelValues(reason).Add(float64(n))
	}
	m.contribution.Add(float64(r.ContributionBytes))
	m.stall.Add(r.StallS)
}

// peakRSS is the process's peak resident set size in bytes (0 if unknown).
func peakRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	if runtime.GOOS == "darwin" {
		return int64(ru.Maxrss) // bytes there, KiB on Linux
	}
	return int64(ru.Maxrss) << 10
}
