package round

import (
	"bytes"
	"testing"
)

// The codec options the network spec may set (2-bit factors, a byte budget, a decayed error
// feedback) keep θ the same bytes on every node, in any arrival order.
func TestCodecOptionsThetaSameOnEveryNodeInAnyOrder(t *testing.T) {
	sameThetaEverywhere(t, []float64{1, 2, 1, 0.5}, 4, 0, "the codec options", func(c *Config) {
		c.Compress.FactorBits, c.Compress.ByteBudget, c.Compress.FeedbackDecay = 2, 400, 0.9
		c.Compress.RankMax = 8
	})
}

// 1-bit factors (signs and block scales, Q refitted by the sender) keep θ the same bytes on
// every node, in any arrival order.
func TestFactorBits1ThetaSameOnEveryNodeInAnyOrder(t *testing.T) {
	sameThetaEverywhere(t, []float64{1, 2, 1, 0.5}, 4, 0, "1-bit factors", func(c *Config) {
		c.Compress.FactorBits, c.Compress.ByteBudget, c.Compress.FeedbackDecay = 1, 400, 0.9
		c.Compress.RankMax = 8
	})
}

// sameThetaEverywhere runs the eager simulation of weights for rounds rounds with edit
// applied to the config and fails t unless θ after round differs differs from the run
// without edit (what names edit), and θ is the same bytes on every node after each round
// and in every arrival order (seeds 2-4 against seed 1).
func sameThetaEverywhere(t *testing.T, weights []float64, rounds, differs int, what string, edit func(*Config)) {
	t.Helper()
	want, _ := eagerSim(t, weights, rounds, 1, edit)
	plain, _ := eagerSim(t, weights, rounds, 1)
	if bytes.Equal(want[differs][0], plain[differs][0]) {
		t.Fatalf("%s changed nothing", what)
	}
	for r, nodes := range want {
		for i := range nodes {
			if !bytes.Equal(nodes[i], nodes[0]) {
				t.Fatalf("round %d: node %d's θ differs from node 0's", r, i)
			}
		}
	}
	for seed := uint64(2); seed < 5; seed++ {
		got, _ := eagerSim(t, weights, rounds, seed, edit)
		for r := range want {
			if !bytes.Equal(got[r][0], want[r][0]) {
				t.Fatalf("arrival order %d changed the bytes of θ after round %d", seed, r)
			}
		}
	}
}

// sharedConfig is edit for the shared bases: delay 0 from the global θ, which they need.
func sharedConfig(c *Config) {
	c.Delay, c.StartPoint, c.StartMix, c.Momentum = 0, StartGlobal, 0, 0
	c.Compress.SharedRank, c.Compress.ByteBudget, c.Compress.FactorBits, c.Compress.RankMin = 6, 400, 2, 1
}

// With shared bases (compress.Config.SharedRank), derived on every node from the last
// aggregate, θ is the same bytes on every node in any arrival order, and from the second
// round (the first with a basis) differs from the same codec without them.
func TestSharedBasesThetaSameOnEveryNodeInAnyOrder(t *testing.T) {
	weights := []float64{1, 2, 1, 0.5}
	want, _ := eagerSim(t, weights, 4, 1, sharedConfig)
	plain, _ := eagerSim(t, weights, 4, 1, sharedConfig, func(c *Config) { c.Compress.SharedRank = 0 })
	if !bytes.Equal(want[0][0], plain[0][0]) || bytes.Equal(want[1][0], plain[1][0]) {
		t.Fatal("the shared bases changed round 0 (which has none) or did not change round 1")
	}
	for r, nodes := range want {
		for i := range nodes {
			if !bytes.Equal(nodes[i], nodes[0]) {
				t.Fatalf("round %d: node %d's θ differs from node 0's", r, i)
			}
		}
	}
	for seed := uint64(2); seed < 5; seed++ {
		got, _ := eagerSim(t, weights, 4, seed, sharedConfig)
		for r := range want {
			if !bytes.Equal(got[r][0], want[r][0]) {
				t.Fatalf("arrival order %d changed the bytes of θ after round %d", seed, r)
			}
		}
	}
}

// The shared bases need delay 0: a machine with the delay and a shared rank is refused.
func TestSharedBasesNeedNoDelay(t *testing.T) {
	cfg := testConfig("a", 1)
	cfg.Compress.SharedRank = 4
	if _, err := New(cfg, State{Params: testTheta(1)}); err == nil {
		t.Fatal("delay 1 with shared bases accepted")
	}
}
