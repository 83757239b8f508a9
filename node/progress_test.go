package node

import (
	"bytes"
	"encoding/json"
	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/node/store"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestProgressLogsEachRoundOnceWithItsLoss: a scored round is logged when its loss
// arrives, an unscored one at once; wire bytes are per round; /status keeps both.
func TestProgressLogsEachRoundOnceWithItsLoss(t *testing.T) {
	var buf bytes.Buffer
	sent, recv := int64(100), int64(50)
	g := gauges{
		bandwidth: func() (int64, int64) { return sent, recv },
		verifyCPU: func() time.Duration { return 1500 * time.Millisecond },
		inbox:     func() int { return 3 },
		stash:     func() int { return 0 },
	}
	reg := prometheus.NewRegistry()
	p, err := newProgress(slog.New(slog.NewJSONHandler(&buf, nil)), reg, g, TrainingStatus{Task: "synthetic"})
	if err != nil {
		t.Fatal(err)
	}
	p.evaluated(evalResult{initial: true, loss: 2})
	p.roundClosed(RoundStatus{Round: 0, Included: []string{"a", "b"}, Rejected: map[string]int{"incomplete": 1}, ContributionBytes: 10, StallS: 0.5}, []string{"x"}, true)
	if strings.Contains(buf.String(), "round closed") {
		t.Fatal("a scored round was logged before its loss")
	}
	sent, recv = 300, 80
	p.roundClosed(RoundStatus{Round: 1, ContributionBytes: 20}, nil, false)
	p.evaluated(evalResult{round: 0, loss: 1.5})
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"round":1`) || !strings.Contains(lines[1], `"loss":1.5`) {
		t.Fatalf("log lines:\n%s", buf.String())
	}
	st := p.status()
	if st.InitialLoss == nil || *st.InitialLoss != 2 || len(st.Rounds) != 2 || st.Rounds[0].Loss == nil || *st.Rounds[0].Loss != 1.5 ||
		st.Rounds[1].WireBytesSent != 200 || st.Rounds[1].WireBytesReceived != 30 || st.ContributionBytes != 30 ||
		st.NextRound != 2 || st.VerifyCPUS != 1.5 || len(st.Slashed) != 1 || st.PeakRSSBytes <= 0 {
		b, _ := json.Marshal(st)
		t.Fatalf("status %s", b)
	}
	if got := gathered(t, reg, "lowband_round_contributions_rejected_total", "incomplete"); got != 1 {
		t.Errorf("rejected incomplete = %v", got)
	}
	if got := gathered(t, reg, "lowband_round_loss", ""); got != 1.5 {
		t.Errorf("loss gauge = %v", got)
	}
}

// gathered is the value of the metric name in reg whose one label has the value label
// ("" for a metric without labels).
func gathered(t *testing.T, reg *prometheus.Registry, name, label string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if mf.GetName() != name || (label != "" && (len(m.GetLabel()) != 1 || m.GetLabel()[0].GetValue() != label)) {
				continue
			}
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	t.Fatalf("no metric %s{%s}", name, label)
	return 0
}

// TestRejectionReasonsServedAtZeroBeforeAnyRejection: every reason a contribution can be
// rejected for is on /metrics from the start, at 0, so that a dashboard's rate of
// rejections is 0, not "no data", on a node that has rejected nothing.
func TestRejectionReasonsServedAtZeroBeforeAnyRejection(t *testing.T) {
	reg := prometheus.NewRegistry()
	g := gauges{verifyCPU: func() time.Duration { return 0 }, inbox: func() int { return 0 }, stash: func() int { return 0 }}
	if _, err := newProgressMetrics(reg, g); err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{"incomplete", "jailed", "weight", "decode", "cap", "equivocation"} {
		if got := gathered(t, reg, "lowband_round_contributions_rejected_total", r); got != 0 {
			t.Errorf("rejected %s = %v before any round", r, got)
		}
	}
}

// TestCaughtUpRoundsAreListed: the rounds a catch-up closed again replace those the node
// closed itself in the status (marked repaired, with the peers' roots) and are added, in
// order and marked caught_up with no loss, where the node never closed them, so that the
// status lists every round up to its head.
func TestCaughtUpRoundsAreListed(t *testing.T) {
	g := gauges{bandwidth: func() (int64, int64) { return 0, 0 }, verifyCPU: func() time.Duration { return 0 },
		inbox: func() int { return 0 }, stash: func() int { return 0 }}
	p, err := newProgress(slog.New(slog.DiscardHandler), prometheus.NewRegistry(), g, TrainingStatus{Task: "synthetic"})
	if err != nil {
		t.Fatal(err)
	}
	loss := 1.0
	for r := range uint64(4) {
		p.roundClosed(RoundStatus{Round: r, Loss: &loss, StateRoot: "own"}, nil, false)
	}
	var rounds []store.Round
	for r := uint64(2); r < 7; r++ {
		root := bytes.Repeat([]byte{byte(r)}, 32)
		rec := &incentives.Record{Round: r, NewRoot: root, Contributions: []incentives.Contribution{{Peer: "peer"}}}
		rounds = append(rounds, store.Round{Record: rec, State: &incentives.State{Round: r + 1, Head: root}})
	}
	p.caughtUp(rounds)
	st := p.status()
	if len(st.Rounds) != 7 || st.NextRound != 7 || st.StateRoot != hexRoot([32]byte(rounds[4].Record.NewRoot)) {
		t.Fatalf("%d rounds listed, next %d, root %s", len(st.Rounds), st.NextRound, st.StateRoot)
	}
	for i, r := range st.Rounds {
		caught, repaired := r.Round >= 4, r.Round == 2 || r.Round == 3
		if r.Round != uint64(i) || r.CaughtUp != caught || r.Repaired != repaired || caught && r.Loss != nil ||
			r.Round >= 2 && (r.StateRoot != hexRoot([32]byte(rounds[r.Round-2].Record.NewRoot)) || len(r.Included) != 1) {
			t.Errorf("round %d listed as %+v", i, r)
		}
	}
}
