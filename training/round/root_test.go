package round

import (
	"encoding/hex"
	"math"
	"slices"
	"testing"

	"github.com/lowband/lowband/training"
)

// rootState is a small state with values whose bits exercise sign, exponent and mantissa.
func rootState() State {
	return State{
		Round: 7,
		Params: []training.Tensor{
			{Name: "w", Shape: []int{2, 2}, Data: []float64{1, -0.5, math.Pi, 1e-300}},
			{Name: "b", Shape: []int{2}, Data: []float64{0, math.Copysign(0, -1)}},
		},
		Momentum: []float64{0.25, -3, 0, 1e10, 2, 5},
	}
}

// The root is a fixed function of the bytes: a golden value pins the encoding, so a change
// of architecture, Go version or field order that changes it fails here.
func TestModelRootGolden(t *testing.T) {
	const want = "9100d6d45039b77c7b7778ec2ba91c9a7b231e22c4cfb3ab660f363c63a04515"
	got := rootState().Root()
	if hex.EncodeToString(got[:]) != want {
		t.Fatalf("model root %x, want %s", got, want)
	}
}

func TestModelRootChangesWithEveryBit(t *testing.T) {
	base := rootState().Root()
	flip := func(xs []float64, i int, bit uint) {
		xs[i] = math.Float64frombits(math.Float64bits(xs[i]) ^ 1<<bit)
	}
	cases := map[string]func(s *State){
		"theta lowest bit":    func(s *State) { flip(s.Params[0].Data, 2, 0) },
		"theta sign of zero":  func(s *State) { flip(s.Params[1].Data, 1, 63) },
		"momentum lowest bit": func(s *State) { flip(s.Momentum, 3, 0) },
		"round":               func(s *State) { s.Round++ },
		"name":                func(s *State) { s.Params[1].Name = "c" },
		"shape":               func(s *State) { s.Params[0].Shape = []int{4, 1} },
		"momentum nil":        func(s *State) { s.Momentum = nil },
		"tensor boundary":     func(s *State) { s.Params[0].Name, s.Params[1].Name = "wb", "" },
	}
	for name, change := range cases {
		s := rootState()
		change(&s)
		if s.Root() == base {
			t.Errorf("%s: root unchanged", name)
		}
	}
	zeros := rootState()
	zeros.Momentum = make([]float64, len(zeros.Momentum))
	none := rootState()
	none.Momentum = nil
	if zeros.Root() == none.Root() {
		t.Error("a momentum of zeros has the root of no momentum")
	}
	c := rootState()
	c.Params[0].Data = slices.Clone(c.Params[0].Data)
	if c.Root() != base {
		t.Error("a copy of the state has another root")
	}
}

// TestMachineRootIsTheStatesRoot: the machine hashes its state in place to the root of the
// copy State returns, before and after a close.
func TestMachineRootIsTheStatesRoot(t *testing.T) {
	a := newMachine(t, testConfig("a", 0), testTheta(3))
	if a.Root() != a.State().Root() {
		t.Fatal("root of the initial state differs")
	}
	s, _ := a.Start()
	if _, err := a.LocalDone(0, perturb(s.Params, 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Close(0); err != nil {
		t.Fatal(err)
	}
	if st := a.State(); a.Root() != st.Root() || st.Momentum == nil {
		t.Fatal("root after a close differs")
	}
}

// TestSnapshotSharesTheClosedParams: a snapshot shares θ with the machine and is never
// changed after: a close steps copies (the snapshot before it keeps its root, the one after
// is the closed parameters, not a copy), a Reset puts copies in force.
func TestSnapshotSharesTheClosedParams(t *testing.T) {
	a := newMachine(t, testConfig("a", 0), testTheta(3))
	s, _ := a.Start()
	if _, err := a.LocalDone(0, perturb(s.Params, 1)); err != nil {
		t.Fatal(err)
	}
	before := a.Snapshot()
	root := before.Root()
	rd, err := a.Close(0)
	if err != nil {
		t.Fatal(err)
	}
	if rd.Start == nil {
		t.Fatal("no local work started after the close")
	}
	if _, err := a.LocalDone(1, perturb(rd.Start.Params, 2)); err != nil {
		t.Fatal(err)
	}
	snap := a.Snapshot()
	if _, err := a.Close(1); err != nil {
		t.Fatal(err)
	}
	if before.Root() != root || before.Round != 0 {
		t.Fatal("closes changed a snapshot taken before them")
	}
	if &snap.Params[0].Data[0] != &rd.Closed.Params[0].Data[0] || snap.Round != 1 || snap.Momentum == nil {
		t.Fatal("the snapshot after a close is not the closed parameters")
	}
	st := a.State()
	st.Params[0].Data[0] += 1
	if err := a.Reset(st); err != nil {
		t.Fatal(err)
	}
	st.Params[0].Data[0] += 1 // Reset took a copy
	if snap = a.Snapshot(); snap.Root() == st.Root() || snap.Root() != a.State().Root() {
		t.Fatal("the snapshot after a reset is not the state put in force")
	}
}
