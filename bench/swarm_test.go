package bench

import (
	"context"

	"github.com/lowband/lowband/configs"
	"math"
	"strings"
	"testing"
	"time"
)

// TestSwarmResultFilledAndConsistent: three nodes train the synthetic task for three
// rounds; every figure is filled, finite and consistent with the others.
func TestSwarmResultFilledAndConsistent(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var log strings.Builder
	res, err := RunSwarm(ctx, SwarmOptions{Nodes: 3, Rounds: 3, Task: "synthetic", Dir: t.TempDir()}, &log)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", *res)
	if got := strings.Count(log.String(), "round "); got != 3 {
		t.Errorf("%d progress lines, want one per round:\n%s", got, log.String())
	}
	if res.Nodes != 3 || res.Rounds != 3 || !res.RootsAgree {
		t.Errorf("nodes %d, rounds %d, roots agree %v", res.Nodes, res.Rounds, res.RootsAgree)
	}
	for name, v := range map[string]float64{"stall_share": res.StallShare, "verify_share": res.VerifyShare,
		"contribution": res.ContributionBytesPerNodeRound, "wire": res.WireBytesPerNodeRound, "ring": res.RingAllReduceBytesPerNodeRound,
		"initial loss": res.EvalLoss.Initial, "final loss": res.EvalLoss.Final} {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			t.Errorf("%s = %v", name, v)
		}
	}
	if res.StallShare > 1 || res.VerifyShare <= 0 || res.VerifyShare >= 1 {
		t.Errorf("stall share %v not at most 1, or verify share %v not in (0, 1)", res.StallShare, res.VerifyShare)
	}
	if !(res.ContributionBytesPerNodeRound > 0 && res.WireBytesPerNodeRound > res.ContributionBytesPerNodeRound) {
		t.Errorf("contribution %v B, wire %v B per node-round: a node sends at least its contribution", res.ContributionBytesPerNodeRound, res.WireBytesPerNodeRound)
	}
	if want := 2 * 2.0 / 3 * float64(res.DenseBytes); res.DenseBytes <= 0 || res.RingAllReduceBytesPerNodeRound != want {
		t.Errorf("ring all-reduce %v B, want 2(N-1)/N of %d", res.RingAllReduceBytesPerNodeRound, res.DenseBytes)
	}
	if res.PeakRSSBytes <= 0 || res.WallSeconds <= 0 || res.CPUSeconds <= 0 {
		t.Errorf("peak RSS %d, wall %v s, CPU %v s", res.PeakRSSBytes, res.WallSeconds, res.CPUSeconds)
	}
	if !(res.AllReduceEvalLoss > 0 && res.AllReduceEvalLoss < res.EvalLoss.Initial) {
		t.Errorf("dense AllReduce baseline %v: want a loss below the initial %v", res.AllReduceEvalLoss, res.EvalLoss.Initial)
	}
	if res.BadAggregated != nil || res.Adversaries != nil {
		t.Errorf("adversary fields filled with no adversary: %v %v", res.BadAggregated, res.Adversaries)
	}
}

// TestSwarmRunsOnEmulatedLinks: with --link-mbps and --latency-ms the nodes train on an
// in-memory network with emulated links: the result says so, counts their wire bytes, and
// a transfer across one link takes at least its bytes over the uplink plus the latency.
func TestSwarmRunsOnEmulatedLinks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	res, err := RunSwarm(ctx, SwarmOptions{Nodes: 3, Rounds: 2, Task: "synthetic", LinkMbps: 100, LatencyMS: 20, Dir: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v %+v", *res, res.LinkCheck)
	if !strings.Contains(res.Transport, "emulated") || !res.RootsAgree {
		t.Errorf("transport %q, roots agree %v", res.Transport, res.RootsAgree)
	}
	if !(res.WireBytesPerNodeRound > res.ContributionBytesPerNodeRound && res.ContributionBytesPerNodeRound > 0) {
		t.Errorf("contribution %v B, wire %v B per node-round on emulated links", res.ContributionBytesPerNodeRound, res.WireBytesPerNodeRound)
	}
	if c := res.LinkCheck; c == nil || c.Bytes <= 0 || c.Ratio < 0.95 {
		t.Errorf("link check %+v: want a transfer no faster than bytes over uplink plus latency", c)
	}
}

// The swarm's spec takes the asked aggregation rule, else keeps the task's; a rule the
// spec refuses is an error before any node starts.
func TestSwarmSpecAggregation(t *testing.T) {
	opt := SwarmOptions{Nodes: 2, Rounds: 1, Task: "synthetic", Dir: t.TempDir(), Aggregation: configs.AggregationSpec{Method: "filtered_mean"}}
	if err := opt.validate(); err != nil {
		t.Fatal(err)
	}
	homes, err := swarmHomes(opt)
	if err != nil {
		t.Fatal(err)
	}
	s, err := swarmSpec(opt, homes)
	if err != nil {
		t.Fatal(err)
	}
	if s.Training.Aggregation != opt.Aggregation || aggregationName(s.Training.Aggregation) != "filtered_mean" {
		t.Fatalf("aggregation %+v, want %+v", s.Training.Aggregation, opt.Aggregation)
	}
	opt.Aggregation = configs.AggregationSpec{}
	if s, err = swarmSpec(opt, homes); err != nil || s.Training.Aggregation != configs.DefaultTrainingSpecFor("synthetic").Aggregation {
		t.Fatalf("no rule asked: aggregation %+v, err %v; want the task's", s.Training.Aggregation, err)
	}
	opt.Aggregation = configs.AggregationSpec{Method: "max"}
	if _, err := swarmSpec(opt, homes); err == nil {
		t.Fatal("an unknown rule was accepted")
	}
	opt.Aggregation = configs.AggregationSpec{}
	for _, merge := range []bool{false, true} {
		opt.Merge = &merge
		if s, err = swarmSpec(opt, homes); err != nil || s.Training.Outer.Merge != merge {
			t.Fatalf("--merge=%v: the spec's outer.merge is %v (%v)", merge, s.Training.Outer.Merge, err)
		}
	}
	opt.Merge = nil
	if s, err = swarmSpec(opt, homes); err != nil || s.Training.Outer.Merge != configs.DefaultTrainingSpecFor("synthetic").Outer.Merge {
		t.Fatalf("no --merge: the spec's outer.merge is %v (%v), want the task's", s.Training.Outer.Merge, err)
	}
}
