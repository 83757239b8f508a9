package round

import (
	"bytes"
	"math"
	"testing"

	"github.com/lowband/lowband/training"
)

// With StartResidual γ, the next local work starts from θ − γ·residual, the residual being
// what the node's message did not deliver of its pseudo-gradient: the pseudo-gradient less
// the message as any receiver decodes it (the first round has no earlier residual, and the
// default decay 1 keeps it whole). Checked to the bit, undelayed.
func TestStartResidualSubtractsUndelivered(t *testing.T) {
	theta0 := testTheta(7)
	cfg := testConfig("a", 0)
	cfg.Momentum, cfg.StartResidual = 0, 0.3
	m := newMachine(t, cfg, theta0)
	if _, err := m.Start(); err != nil {
		t.Fatal(err)
	}
	local := perturb(theta0, 1)
	rd, err := m.LocalDone(0, local)
	if err != nil {
		t.Fatal(err)
	}
	sent, err := rd.Send.Msg.Decode()
	if err != nil {
		t.Fatal(err)
	}
	closed, err := m.Close(0)
	if err != nil || closed.Start == nil {
		t.Fatalf("Close(0) = %+v, %v", closed, err)
	}
	for i, tt := range closed.Closed.Params {
		var got []float64
		for _, s := range sent {
			if s.Name == tt.Name {
				got = s.Data
			}
		}
		if got == nil {
			t.Fatalf("the message has no %s", tt.Name)
		}
		moved := false
		for j, v := range tt.Data {
			delta := theta0[i].Data[j] - local[i].Data[j]
			want := v - float64(0.3*(delta-got[j]))
			if s := closed.Start.Params[i].Data[j]; math.Float64bits(s) != math.Float64bits(want) {
				t.Fatalf("round 1 start %s[%d] = %v, want θ1 − γ·(Δ − sent) = %v", tt.Name, j, s, want)
			}
			moved = moved || want != v
		}
		if !moved {
			t.Fatalf("%s: the residual is zero, the test checks nothing", tt.Name)
		}
	}
}

// With the residual weight, every node computes the same bytes of θ for every closed round
// in any arrival order, and its private starts do not depend on the arrival order; the
// weight changes every node's start. (The simulated local work moves a fixed step from the
// start, so θ itself does not depend on the start here.)
func TestStartResidualThetaSameOnEveryNodeInAnyOrder(t *testing.T) {
	weights := []float64{1, 2, 1, 0.5}
	res := func(c *Config) { c.StartMix, c.StartResidual = 0.5, 0.25 }
	want, starts := eagerSim(t, weights, 5, 1, res)
	for r, nodes := range want {
		for i := range nodes {
			if !bytes.Equal(nodes[i], nodes[0]) {
				t.Fatalf("round %d: node %d's θ differs from node 0's", r, i)
			}
		}
	}
	for seed := uint64(2); seed < 5; seed++ {
		got, gotStarts := eagerSim(t, weights, 5, seed, res)
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
	for i := range starts {
		if _, plain := eagerSim(t, weights, 5, 1, func(c *Config) { c.StartMix = 0.5 }); bytes.Equal(plain[i], starts[i]) {
			t.Fatalf("the residual weight did not change node %d's start", i)
		}
	}
}

// A restarted node (Local, then SetLocal on a new Machine) starts from the same point: the
// residual the start subtracts is part of the local state.
func TestStartResidualSurvivesRestart(t *testing.T) {
	theta0 := testTheta(9)
	cfg := testConfig("a", 0)
	cfg.Momentum, cfg.StartResidual = 0, 0.5
	m := newMachine(t, cfg, theta0)
	if _, err := m.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := m.LocalDone(0, perturb(theta0, 1)); err != nil {
		t.Fatal(err)
	}
	closed, err := m.Close(0)
	if err != nil || closed.Start == nil {
		t.Fatalf("Close(0) = %+v, %v", closed, err)
	}
	loc := m.Local()
	again := newMachineAt(t, cfg, m.State())
	if err := again.SetLocal(loc); err != nil {
		t.Fatal(err)
	}
	s, err := again.Start()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(tensorBits(s.Params), tensorBits(closed.Start.Params)) {
		t.Fatal("the restarted node starts elsewhere")
	}
	if bytes.Equal(tensorBits(s.Params), tensorBits(closed.Closed.Params)) {
		t.Fatal("the start is θ: the residual weight did nothing")
	}
}

func TestStartResidualRefusedOutOfRange(t *testing.T) {
	for _, g := range []float64{-0.1, 1.5, math.NaN()} {
		cfg := testConfig("a", 0)
		cfg.StartResidual = g
		if _, err := New(cfg, State{Params: testTheta(1)}); err == nil {
			t.Errorf("residual weight %v accepted", g)
		}
	}
	cfg := testConfig("a", 0)
	cfg.StartResidual = 1
	if _, err := New(cfg, State{Params: []training.Tensor{{Name: "w", Shape: []int{2}, Data: []float64{1, 2}}}}); err != nil {
		t.Errorf("residual weight 1: %v", err)
	}
}
