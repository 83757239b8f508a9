package round

import (
	"bytes"
	"math"
	"testing"

	"github.com/lowband/lowband/training/compress"
)

// sentConfig is the eager start with a mix and StartSent σ.
func sentConfig(self string, sigma float64) Config {
	cfg := eagerConfig(self, 1)
	cfg.StartMix, cfg.StartSent = 0.5, sigma
	return cfg
}

// named returns the data of the tensor called name in ts, or nil.
func named(ts []compress.Tensor, name string) []float64 {
	for _, t := range ts {
		if t.Name == name {
			return t.Data
		}
	}
	return nil
}

// With StartSent σ, round t+1's local work starts from θ_t − α·Δ_own − σ·sent_own, sent_own
// being the node's own message of round t as any receiver decodes it: checked to the bit
// against that formula, every product rounded before it is subtracted, in that order.
func TestStartSentSubtractsOwnMessage(t *testing.T) {
	theta0 := testTheta(7)
	m := newMachine(t, sentConfig("a", 0.35), theta0)
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
	rd1, err := m.LocalDone(1, local1)
	if err != nil {
		t.Fatal(err)
	}
	sent, err := rd1.Send.Msg.Decode()
	if err != nil {
		t.Fatal(err)
	}
	closed, err := m.Close(0)
	if err != nil || closed.Start == nil || closed.Start.Round != 2 {
		t.Fatalf("Close(0) = %+v, %v", closed, err)
	}
	moved := false
	for i, tt := range closed.Closed.Params {
		s := named(sent, tt.Name)
		if s == nil {
			t.Fatalf("the message has no %s", tt.Name)
		}
		for j, v := range tt.Data {
			own := theta0[i].Data[j] - local1[i].Data[j]
			want := v - float64(0.5*own)
			want -= float64(0.35 * s[j])
			if got := closed.Start.Params[i].Data[j]; math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("round 2 start %s[%d] = %v, want θ1 − α·Δ_own − σ·sent_own = %v", tt.Name, j, got, want)
			}
			moved = moved || s[j] != 0
		}
	}
	if !moved {
		t.Fatal("the own message is zero: the test checks nothing")
	}
}

// With StartSent, every node computes the same bytes of θ for every closed round in any
// arrival order, and its private starts do not depend on the arrival order; σ changes
// every node's start.
func TestStartSentThetaSameOnEveryNodeInAnyOrder(t *testing.T) {
	weights := []float64{1, 2, 1, 0.5}
	sent := func(c *Config) { c.StartMix, c.StartResidual, c.StartSent = 0.5, 0.35, 0.35 }
	want, starts := eagerSim(t, weights, 5, 1, sent)
	for r, nodes := range want {
		for i := range nodes {
			if !bytes.Equal(nodes[i], nodes[0]) {
				t.Fatalf("round %d: node %d's θ differs from node 0's", r, i)
			}
		}
	}
	for seed := uint64(2); seed < 5; seed++ {
		got, gotStarts := eagerSim(t, weights, 5, seed, sent)
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
	_, plain := eagerSim(t, weights, 5, 1, func(c *Config) { c.StartMix, c.StartResidual = 0.5, 0.35 })
	for i := range starts {
		if bytes.Equal(plain[i], starts[i]) {
			t.Fatalf("StartSent did not change node %d's start", i)
		}
	}
}

// A restarted node (Local, then SetLocal on a new Machine) starts from the same point: its
// own message is part of the local state. Without it (a state saved before the field
// existed) the restarted node starts without the term, and a message without an own
// pseudo-gradient, or of another size, is refused.
func TestStartSentSurvivesRestart(t *testing.T) {
	theta0 := testTheta(7)
	cfg := sentConfig("a", 0.5)
	a := newMachine(t, cfg, theta0)
	if _, err := a.Start(); err != nil {
		t.Fatal(err)
	}
	rd, err := a.LocalDone(0, perturb(theta0, 1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.LocalDone(1, perturb(rd.Start.Params, 2)); err != nil {
		t.Fatal(err)
	}
	rd, err = a.Close(0)
	if err != nil || rd.Start == nil || rd.Start.Round != 2 {
		t.Fatalf("Close(0) = %+v, %v", rd, err)
	}
	loc := a.Local()
	if loc.Sent == nil {
		t.Fatal("the local state holds no own message")
	}
	b := newMachineAt(t, cfg, a.State())
	if err := b.SkipLocal(2); err != nil {
		t.Fatal(err)
	}
	if err := b.SetLocal(loc); err != nil {
		t.Fatal(err)
	}
	sb, err := b.Start()
	if err != nil || sb.Round != 2 || !bytes.Equal(tensorBits(sb.Params), tensorBits(rd.Start.Params)) {
		t.Fatalf("restored start %d, %v: not the point round 2 starts from", sb.Round, err)
	}
	old := loc
	old.Sent = nil
	c := newMachineAt(t, cfg, a.State())
	if err := c.SkipLocal(2); err != nil {
		t.Fatal(err)
	}
	if err := c.SetLocal(old); err != nil {
		t.Fatal(err)
	}
	sc, err := c.Start()
	if err != nil || bytes.Equal(tensorBits(sc.Params), tensorBits(rd.Start.Params)) {
		t.Fatalf("a state without the own message: %v, or the same start", err)
	}
	for _, bad := range []LocalState{{Codec: loc.Codec, Sent: loc.Sent}, {Codec: loc.Codec, Own: loc.Own, Sent: loc.Sent[1:]}} {
		d := newMachineAt(t, cfg, a.State())
		if err := d.SetLocal(bad); err == nil {
			t.Fatalf("own message of %d values with own pseudo-gradient %v accepted", len(bad.Sent), bad.Own != nil)
		}
	}
}

func TestStartSentRefusedOutOfRangeOrWithoutEager(t *testing.T) {
	for _, c := range []Config{
		sentConfig("a", 1.5),
		sentConfig("a", -0.1),
		sentConfig("a", math.NaN()),
		func() Config { c := testConfig("a", 1); c.StartSent = 0.3; return c }(),
	} {
		if _, err := New(c, State{Params: testTheta(1)}); err == nil {
			t.Errorf("StartSent %v with start point %q accepted", c.StartSent, c.StartPoint)
		}
	}
	if _, err := New(sentConfig("a", 1), State{Params: testTheta(1)}); err != nil {
		t.Errorf("StartSent 1: %v", err)
	}
}
