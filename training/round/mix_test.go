package round

import (
	"bytes"
	"math"
	"testing"
)

// With StartMix α, round t+1's local work starts from θ_t − α·Δ_own: the weight of the
// node's own progress is α, not the outer lr times its share.
func TestStartMixWeighsOwnPseudoGradient(t *testing.T) {
	theta0 := testTheta(7)
	cfg := eagerConfig("a", 1)
	cfg.StartMix = 0.8
	m := newMachine(t, cfg, theta0)
	if _, err := m.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := m.LocalDone(0, perturb(theta0, 1)); err != nil {
		t.Fatal(err)
	}
	for _, r := range []uint64{0, 1} {
		if err := m.Receive(contributions(t, theta0, r, []string{"b"})[0]); err != nil {
			t.Fatal(err)
		}
	}
	local1 := perturb(theta0, 2)
	if _, err := m.LocalDone(1, local1); err != nil {
		t.Fatal(err)
	}
	closed, err := m.Close(0)
	if err != nil || closed.Start == nil {
		t.Fatalf("Close(0) = %+v, %v", closed, err)
	}
	for i, tt := range closed.Closed.Params {
		for j, v := range tt.Data {
			own := theta0[i].Data[j] - local1[i].Data[j]
			want := v - float64(0.8*own)
			if got := closed.Start.Params[i].Data[j]; math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("round 2 start %s[%d] = %v, want θ1 − α·Δ_own = %v", tt.Name, j, got, want)
			}
		}
	}
}

// With a start mix, every node computes the same bytes of θ for every closed round in any
// arrival order; the mix moves the private starts only.
func TestStartMixThetaSameOnEveryNodeInAnyOrder(t *testing.T) {
	weights := []float64{1, 2, 1, 0.5}
	mix := func(c *Config) { c.StartMix = 0.6 }
	want, starts := eagerSim(t, weights, 5, 1, mix)
	for r, nodes := range want {
		for i := range nodes {
			if !bytes.Equal(nodes[i], nodes[0]) {
				t.Fatalf("round %d: node %d's θ differs from node 0's", r, i)
			}
		}
	}
	for seed := uint64(2); seed < 5; seed++ {
		got, gotStarts := eagerSim(t, weights, 5, seed, mix)
		for r := range want {
			if !bytes.Equal(got[r][0], want[r][0]) {
				t.Fatalf("arrival order %d changed the bytes of θ after round %d", seed, r)
			}
		}
		for i := range starts {
			if !bytes.Equal(gotStarts[i], starts[i]) {
				t.Fatalf("arrival order %d changed node %d's start", seed, i)
			}
		}
	}
	if _, eager := eagerSim(t, weights, 5, 1); bytes.Equal(eager[0], starts[0]) {
		t.Fatal("the mix did not change the start")
	}
}

func TestStartMixRefusedOutOfRangeOrWithoutEager(t *testing.T) {
	for _, c := range []Config{
		func() Config { c := eagerConfig("a", 1); c.StartMix = 1.5; return c }(),
		func() Config { c := eagerConfig("a", 1); c.StartMix = -0.1; return c }(),
		func() Config { c := eagerConfig("a", 1); c.StartMix = math.NaN(); return c }(),
		func() Config { c := testConfig("a", 1); c.StartMix = 0.5; return c }(),
	} {
		if _, err := New(c, State{Params: testTheta(1)}); err == nil {
			t.Errorf("start %q with mix %v accepted", c.StartPoint, c.StartMix)
		}
	}
}

// With a byte budget whose first message is larger (compress.Config.FirstBudget), every
// node computes the same bytes of θ for every closed round in any arrival order, and the
// first messages are larger than the next.
func TestFirstBudgetThetaSameOnEveryNodeInAnyOrder(t *testing.T) {
	weights := []float64{1, 2, 1, 0.5}
	first := func(c *Config) { c.Compress.ByteBudget, c.Compress.FirstBudget, c.Compress.RankMin = 60, 3, 1 }
	want, _ := eagerSim(t, weights, 5, 1, first)
	plain, _ := eagerSim(t, weights, 5, 1, func(c *Config) { c.Compress.ByteBudget, c.Compress.RankMin = 60, 1 })
	if bytes.Equal(plain[0][0], want[0][0]) {
		t.Fatal("the first budget did not change round 0's θ")
	}
	for r, nodes := range want {
		for i := range nodes {
			if !bytes.Equal(nodes[i], nodes[0]) {
				t.Fatalf("round %d: node %d's θ differs from node 0's", r, i)
			}
		}
	}
	for seed := uint64(2); seed < 5; seed++ {
		got, _ := eagerSim(t, weights, 5, seed, first)
		for r := range want {
			if !bytes.Equal(got[r][0], want[r][0]) {
				t.Fatalf("arrival order %d changed the bytes of θ after round %d", seed, r)
			}
		}
	}
}
