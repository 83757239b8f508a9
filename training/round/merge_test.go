package round

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lowband/lowband/training"
	"github.com/lowband/lowband/training/compress"
)

func mergeConfig(self string, weight float64) Config {
	cfg := eagerConfig(self, weight)
	cfg.StartMix, cfg.Merge = 0.5, true
	return cfg
}

// With Merge, the round before the local work under way may close during that work; the
// close's Shift moves the work to θ after that round (no eager term), the pseudo-gradient
// is measured from there, and the close computes the same θ as one after the work ends.
// Without Merge the round waits for the work.
func TestMergeClosesDuringLocalWorkAndShiftsIt(t *testing.T) {
	theta0 := testTheta(7)
	run := func(merge bool) (*Machine, []training.Tensor) {
		cfg := mergeConfig("a", 1)
		cfg.Merge = merge
		m := newMachine(t, cfg, theta0)
		if _, err := m.Start(); err != nil {
			t.Fatal(err)
		}
		rd, err := m.LocalDone(0, perturb(theta0, 1))
		if err != nil || rd.Start == nil {
			t.Fatalf("LocalDone(0) = %+v, %v", rd, err)
		}
		for _, r := range []uint64{0, 1} {
			if err := m.Receive(contributions(t, theta0, r, []string{"b"})[0]); err != nil {
				t.Fatal(err)
			}
		}
		return m, rd.Start.Params
	}

	plain, _ := run(false)
	if _, ok := plain.Closable(); ok {
		t.Fatal("without Merge, round 0 is closable while round 1's work is under way")
	}
	m, start1 := run(true)
	if next, ok := m.Closable(); !ok || next != 0 {
		t.Fatalf("with Merge, Closable() = %d, %v during round 1's work, want 0, true", next, ok)
	}
	rd, err := m.Close(0)
	if err != nil {
		t.Fatal(err)
	}
	if rd.Start != nil {
		t.Fatalf("a merging close started round %d while round 1's work is under way", rd.Start.Round)
	}
	if rd.Shift == nil {
		t.Fatal("a close during local work gave no shift")
	}
	theta1 := rd.Closed.Params
	for i := range theta1 {
		for j, v := range theta1[i].Data {
			if want := v - start1[i].Data[j]; math.Float64bits(rd.Shift[i].Data[j]) != math.Float64bits(want) {
				t.Fatalf("shift %s[%d] = %v, want θ1 − start1 = %v", theta1[i].Name, j, rd.Shift[i].Data[j], want)
			}
		}
	}
	// The same round closed after the work ends gives the same θ: a merge moves only
	// this node's work.
	if _, err := plain.LocalDone(1, perturb(start1, 2)); err != nil {
		t.Fatal(err)
	}
	prd, err := plain.Close(0)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(tensorBits(prd.Closed.Params), tensorBits(theta1)) {
		t.Fatal("a merging close computed another θ")
	}
	if _, ok := m.Closable(); ok {
		t.Fatal("round 1 closable during its own local work")
	}

	// The work goes on from start1 + shift; its pseudo-gradient is measured from θ1, and
	// the next (eager) start is θ1 − 0.5·(θ1 − local).
	local := perturb(start1, 2)
	if err := training.AddTo(local, rd.Shift); err != nil {
		t.Fatal(err)
	}
	rd, err = m.LocalDone(1, local)
	if err != nil || rd.Start == nil || rd.Start.Round != 2 {
		t.Fatalf("LocalDone(1) after the merge = %+v, %v", rd.Start, err)
	}
	for i := range theta1 {
		for j, v := range theta1[i].Data {
			d := v - local[i].Data[j]
			if want := v - float64(0.5*d); math.Float64bits(rd.Start.Params[i].Data[j]) != math.Float64bits(want) {
				t.Fatalf("round 2 start %s[%d] = %v, want θ1 − 0.5·(θ1 − local) = %v", theta1[i].Name, j, rd.Start.Params[i].Data[j], want)
			}
		}
	}
}

func TestMergeNeedsDelayOne(t *testing.T) {
	cfg := testConfig("a", 0)
	cfg.Merge = true
	if _, err := New(cfg, State{Params: testTheta(1)}); err == nil {
		t.Fatal("Merge with delay 0 accepted")
	}
}

// mergeSim runs nodes with Merge: each round's local work takes a step, then the round
// before it closes (contributions delivered in an order drawn from orderSeed), the shift is
// applied, and the work takes a second step. It returns every node's θ bytes per closed
// round.
func mergeSim(t *testing.T, weights []float64, rounds int, orderSeed uint64) [][][]byte {
	t.Helper()
	n := len(weights)
	theta0 := testTheta(8)
	ms, locals := make([]*Machine, n), make([][]training.Tensor, n)
	for i := range ms {
		cfg := mergeConfig(fmt.Sprint("peer-", i), weights[i])
		cfg.StartResidual = 0.25
		ms[i] = newMachine(t, cfg, theta0)
		s, err := ms[i].Start()
		if err != nil {
			t.Fatal(err)
		}
		locals[i] = s.Params
	}
	var closed [][][]byte
	shards := make([][]compress.Shard, n)
	rng := rand.New(rand.NewPCG(orderSeed, 5))
	step := func(i int, r uint64, k uint64) { // a stand-in for an inner step
		for j, tt := range perturb(locals[i], 1000*r+10*uint64(i)+k) {
			for e := range tt.Data {
				locals[i][j].Data[e] += 0.1 * (tt.Data[e] - locals[i][j].Data[e])
			}
		}
	}
	closeDue := func(i int) {
		for {
			next, ok := ms[i].Closable()
			if !ok {
				return
			}
			rd, err := ms[i].Close(next)
			if err != nil {
				t.Fatal(err)
			}
			for int(next) >= len(closed) {
				closed = append(closed, make([][]byte, n))
			}
			closed[next][i] = tensorBits(rd.Closed.Params)
			if rd.Shift != nil {
				if err := training.AddTo(locals[i], rd.Shift); err != nil {
					t.Fatal(err)
				}
			}
			if rd.Start != nil {
				locals[i] = rd.Start.Params
			}
		}
	}
	for r := uint64(0); r < uint64(rounds); r++ {
		for i := range ms {
			step(i, r, 0)
			if r > 0 { // round r-1's contributions are in: close it during round r's work
				for _, v := range rng.Perm(n) {
					if v != i {
						deliver(t, ms[i], r-1, fmt.Sprint("peer-", v), weights[v], shards[v])
					}
				}
				closeDue(i)
			}
			step(i, r, 1)
		}
		for i, m := range ms {
			rd, err := m.LocalDone(r, locals[i])
			if err != nil {
				t.Fatal(err)
			}
			shards[i] = rd.Send.Shards
			if rd.Start == nil {
				t.Fatalf("node %d: no start after round %d's work", i, r)
			}
			locals[i] = rd.Start.Params
		}
	}
	return closed
}

// With Merge every node computes the same bytes of θ for every closed round, whatever the
// order in which contributions arrive.
func TestMergeThetaSameOnEveryNodeInAnyOrder(t *testing.T) {
	weights := []float64{1, 2, 1, 0.5}
	want := mergeSim(t, weights, 5, 1)
	if len(want) != 4 {
		t.Fatalf("%d rounds closed, want 4", len(want))
	}
	for r, nodes := range want {
		for i := range nodes {
			if !bytes.Equal(nodes[i], nodes[0]) {
				t.Fatalf("round %d: node %d's θ differs from node 0's", r, i)
			}
		}
	}
	for seed := uint64(2); seed < 5; seed++ {
		got := mergeSim(t, weights, 5, seed)
		for r := range want {
			if !bytes.Equal(got[r][0], want[r][0]) {
				t.Fatalf("arrival order %d changed the bytes of θ after round %d", seed, r)
			}
		}
	}
}

// A merge after a Reset during the work moves the work from the base the Reset kept (the
// point the work started from), not from a start made again on the reset θ.
func TestMergeAfterResetShiftsFromTheKeptBase(t *testing.T) {
	theta0 := testTheta(7)
	m := newMachine(t, mergeConfig("a", 1), theta0)
	if _, err := m.Start(); err != nil {
		t.Fatal(err)
	}
	rd, err := m.LocalDone(0, perturb(theta0, 1))
	if err != nil || rd.Start == nil {
		t.Fatalf("LocalDone(0) = %+v, %v", rd, err)
	}
	start1 := rd.Start.Params
	// A repair puts another θ under the work of round 1.
	if err := m.Reset(State{Round: 0, Params: perturb(theta0, 9)}); err != nil {
		t.Fatal(err)
	}
	if err := m.Receive(contributions(t, theta0, 0, []string{"b"})[0]); err != nil {
		t.Fatal(err)
	}
	rd, err = m.Close(0)
	if err != nil || rd.Shift == nil {
		t.Fatalf("Close(0) after the Reset = %+v, %v", rd, err)
	}
	for i, tt := range rd.Closed.Params {
		for j, v := range tt.Data {
			if want := v - start1[i].Data[j]; math.Float64bits(rd.Shift[i].Data[j]) != math.Float64bits(want) {
				t.Fatalf("shift %s[%d] = %v, want θ1 − the start the work had = %v", tt.Name, j, rd.Shift[i].Data[j], want)
			}
		}
	}
}

// Abandoned work is not merged into: the round before it waits, as without Merge, and
// the next work starts afresh.
func TestMergeNotIntoAbandonedWork(t *testing.T) {
	theta0 := testTheta(7)
	m := newMachine(t, mergeConfig("a", 1), theta0)
	if _, err := m.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := m.LocalDone(0, perturb(theta0, 1)); err != nil {
		t.Fatal(err)
	}
	if err := m.Receive(contributions(t, theta0, 0, []string{"b"})[0]); err != nil {
		t.Fatal(err)
	}
	if err := m.Abandon(); err != nil {
		t.Fatal(err)
	}
	if _, ok := m.Closable(); ok {
		t.Fatal("round 0 closable into abandoned work")
	}
	if err := m.SkipLocal(2); err != nil {
		t.Fatal(err)
	}
	rd, err := m.Close(0)
	if err != nil || rd.Shift != nil || rd.Start == nil || rd.Start.Round != 2 {
		t.Fatalf("Close(0) with no work under way = shift %v, start %+v, %v; want no shift and the start of round 2", rd.Shift != nil, rd.Start, err)
	}
}
