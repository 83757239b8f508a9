package checkpoint_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
	"github.com/lowband/lowband/node/checkpoint"
	"github.com/lowband/lowband/node/core"
	"github.com/lowband/lowband/training"
	"github.com/lowband/lowband/training/aggregate"
	"github.com/lowband/lowband/training/compress"
	"github.com/lowband/lowband/training/round"
	"github.com/lowband/lowband/verify"
)

const (
	testNetwork = "testnet"
	testRun     = "run-1"
)

// theta0 is a small model: a matrix the codec compresses at low rank and a dense bias.
func theta0() []training.Tensor {
	rng := rand.New(rand.NewPCG(1, 1))
	w := make([]float64, 96*64)
	for i := range w {
		w[i] = rng.NormFloat64()
	}
	return []training.Tensor{{Name: "w", Shape: []int{96, 64}, Data: w}, {Name: "b", Shape: []int{64}, Data: make([]float64, 64)}}
}

func limits() checkpoint.Limits {
	return checkpoint.Limits{Network: testNetwork, Run: testRun, Like: theta0()}
}

// trained is a single staked node's Core after it closed rounds 0..n-1, and the commits it
// asked to persist, in order.
type trained struct {
	core    *core.Core
	commits []*core.Commit
}

// train runs one node (the only staker, so each round closes on its own contribution)
// until it has closed n rounds. Its outer step uses momentum, so the momentum is not nil.
func train(t *testing.T, n int) *trained {
	t.Helper()
	fx := incentivestest.New(testNetwork, testRun)
	id := incentivestest.PeerID("a")
	p := incentives.Params{MinStake: 100, Reward: 10, JailRounds: 3, UnstakedWeightPPM: 500_000, EvidenceWindow: 4}
	led, err := incentives.NewState(p, incentives.Genesis{Stakes: []incentives.Stake{{Peer: id, Amount: 100}}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := core.New(core.Config{
		Self: id, Network: testNetwork, Run: testRun,
		Round: round.Config{
			Self: id, Weight: 1, Delay: 1, OuterLR: 0.35, Momentum: 0.5,
			Compress:  compress.Config{RankMin: 2, RankMax: 4, MinLowRank: 16, MaxShardBytes: compress.MinShardBytes, Seed: 3},
			Aggregate: aggregate.Config{Method: aggregate.Mean},
		},
		Deadline: core.DeadlineConfig{Quorum: 0.67, Min: time.Second, Max: time.Minute, K: 3},
		Checker:  fx.Checker(), Limits: compress.DefaultLimits,
	}, round.State{Params: theta0()}, led)
	if err != nil {
		t.Fatal(err)
	}
	bundle := fx.Bundle("a", "")
	b, err := verify.UnmarshalBundle(bundle)
	if err != nil {
		t.Fatal(err)
	}
	c.SetSigner(core.Signer{Key: fx.Key("a"), Bundle: bundle, BundleHash: b.Hash()})
	tr := &trained{core: c}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rd, err := c.Start(now)
	for err == nil && len(tr.commits) < n {
		if rd.Commit != nil {
			tr.commits = append(tr.commits, rd.Commit)
		}
		if rd.Train == nil {
			t.Fatalf("no local work to do after %d commits", len(tr.commits))
		}
		now = now.Add(time.Second)
		rd, err = c.LocalDone(now, rd.Train.Round, step(rd.Train))
	}
	if err != nil {
		t.Fatal(err)
	}
	if rd.Commit != nil {
		tr.commits = append(tr.commits, rd.Commit)
	}
	return tr
}

// step is local work: a small deterministic move from the start.
func step(s *round.Start) []training.Tensor {
	rng := rand.New(rand.NewPCG(7, s.Round))
	out := make([]training.Tensor, len(s.Params))
	for i, p := range s.Params {
		d := make([]float64, len(p.Data))
		for j := range d {
			d[j] = p.Data[j] - 0.01*(p.Data[j]+rng.NormFloat64())
		}
		out[i] = training.Tensor{Name: p.Name, Shape: p.Shape, Data: d}
	}
	return out
}

// checkpointOf is the checkpoint of the core's state after its last commit.
func (tr *trained) checkpointOf(t *testing.T) (*checkpoint.Checkpoint, *core.Commit) {
	t.Helper()
	last := tr.commits[len(tr.commits)-1]
	c := &checkpoint.Checkpoint{
		Network: testNetwork, Run: testRun, Round: last.Record.Round + 1,
		Prev: [32]byte(last.Record.PrevRoot), Model: tr.core.Model(), Ledger: tr.core.Ledger(),
	}
	if c.Model.Round != c.Round || c.Ledger.Round != c.Round {
		t.Fatalf("model at round %d, ledger at %d, checkpoint of %d", c.Model.Round, c.Ledger.Round, c.Round)
	}
	return c, last
}
