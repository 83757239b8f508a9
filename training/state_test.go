package training

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

// stateFixture is a small classifier, its inner optimizer and a batcher over the synthetic
// task, all from fixed seeds.
func stateFixture(t *testing.T) (*Inner, *Batcher) {
	t.Helper()
	d, err := NewSynthetic(200, 6, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewClassifier(6, []int{8}, 3, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewBatcher(d, Range(0, 150), 16, 9)
	if err != nil {
		t.Fatal(err)
	}
	return &Inner{Model: m, Opt: NewAdamW(0.01), Schedule: Schedule{Peak: 0.01, Min: 0.001, Warmup: 3, Total: 40}, Clip: 1}, b
}

// TestInnerStateRestoredTrainsTheSameBits: an inner loop rebuilt from scratch, given the
// parameters, AdamW's state, the step count and the data position of another, takes the
// next steps to the same bits as the one that went on (past an epoch of its data).
func TestInnerStateRestoredTrainsTheSameBits(t *testing.T) {
	a, ba := stateFixture(t)
	if _, err := a.Run(ba, 7); err != nil {
		t.Fatal(err)
	}
	b, bb := stateFixture(t)
	if err := Load(b.Model.Params(), Snapshot(a.Model.Params())); err != nil {
		t.Fatal(err)
	}
	if err := b.Opt.(*AdamW).SetState(a.Opt.(*AdamW).State(), b.Model.Params()); err != nil {
		t.Fatal(err)
	}
	if err := b.SetSteps(a.Steps()); err != nil {
		t.Fatal(err)
	}
	bb.Skip(ba.Drawn())
	if bb.Drawn() != ba.Drawn() || ba.Drawn() != 7*16 {
		t.Fatalf("drawn %d and %d, want %d", ba.Drawn(), bb.Drawn(), 7*16)
	}
	for range 2 {
		la, _ := a.Run(ba, 6)
		lb, _ := b.Run(bb, 6)
		if la != lb {
			t.Fatalf("loss %v after the restore, %v without", lb, la)
		}
	}
	for i, p := range a.Model.Params() {
		if !slices.Equal(p.Data, b.Model.Params()[i].Data) {
			t.Fatalf("parameter %s differs after the restore", p.Name)
		}
	}
}

// TestAdamWSetStateRefusesOtherShapes: moments of another model, a step count without
// moments, or values that are not finite are refused with ErrState.
func TestAdamWSetStateRefusesOtherShapes(t *testing.T) {
	a, ba := stateFixture(t)
	if _, err := a.Run(ba, 2); err != nil {
		t.Fatal(err)
	}
	ps := a.Model.Params()
	for name, bad := range map[string]func(st *AdamWState){
		"one parameter short": func(st *AdamWState) { st.M, st.V = st.M[1:], st.V[1:] },
		"moment size":         func(st *AdamWState) { st.V[0] = st.V[0][1:] },
		"steps, no moments":   func(st *AdamWState) { st.M, st.V = nil, nil },
		"negative second":     func(st *AdamWState) { st.V[0][0] = -1 },
		"negative step":       func(st *AdamWState) { st.T = -1 },
	} {
		st := a.Opt.(*AdamW).State()
		bad(&st)
		o := NewAdamW(0.01)
		if err := o.SetState(st, ps); !errors.Is(err, ErrState) {
			t.Errorf("%s: %v, want ErrState", name, err)
		}
		if o.t != 0 || o.m != nil {
			t.Errorf("%s: a refused state changed the optimizer", name)
		}
	}
}
