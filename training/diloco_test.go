package training

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

func newSynthModel(t *testing.T, seed uint64) *MLP {
	t.Helper()
	m, err := NewClassifier(8, []int{16}, 4, rand.New(rand.NewPCG(seed, 1)))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func synthBatchers(t *testing.T, workers int) []*Batcher {
	t.Helper()
	d, err := NewSynthetic(2048, 8, 4, 42)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]*Batcher, workers)
	for w := range out {
		idx, err := NodeSlice(d.Len(), 7, w, workers)
		if err != nil {
			t.Fatal(err)
		}
		if out[w], err = NewBatcher(d, idx, 16, uint64(w)); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func maxDiff(t *testing.T, a, b []*Param) float64 {
	t.Helper()
	d := 0.0
	for i := range a {
		for j := range a[i].Data {
			d = math.Max(d, math.Abs(a[i].Data[j]-b[i].Data[j]))
		}
	}
	return d
}

// dilocoRound runs one DiLoCo round: every worker starts from theta, takes h inner steps,
// the mean pseudo-gradient is applied by outer. Models are reloaded from the new theta.
func dilocoRound(t *testing.T, theta []float64, inners []*Inner, bs []*Batcher, h int, outer *Nesterov) {
	t.Helper()
	mean := make([]float64, len(theta))
	for w, in := range inners {
		ps := in.Model.Params()
		global, _ := Unflatten(theta, Snapshot(ps))
		if err := Load(ps, global); err != nil {
			t.Fatal(err)
		}
		if _, err := in.Run(bs[w], h); err != nil {
			t.Fatal(err)
		}
		delta, err := PseudoGradient(global, Snapshot(ps))
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range Flatten(delta) {
			mean[i] += v / float64(len(inners))
		}
	}
	if err := outer.Step(theta, mean); err != nil {
		t.Fatal(err)
	}
}

// With H=1, outer lr 1 and no momentum, DiLoCo with one worker is synchronous AdamW.
func TestDiLoCoH1EqualsSyncAdamW(t *testing.T) {
	syncM, dilM := newSynthModel(t, 1), newSynthModel(t, 1)
	sched := Schedule{Peak: 0.01, Min: 0.001, Warmup: 3, Total: 20}
	sync := &Inner{Model: syncM, Opt: NewAdamW(0.01), Schedule: sched, Clip: 1}
	dil := &Inner{Model: dilM, Opt: NewAdamW(0.01), Schedule: sched, Clip: 1}
	b1, b2 := synthBatchers(t, 1)[0], synthBatchers(t, 1)[0]
	theta := Flatten(Snapshot(dilM.Params()))
	outer := &Nesterov{LR: 1, Momentum: 0}
	for r := 0; r < 20; r++ {
		if _, err := sync.Run(b1, 1); err != nil {
			t.Fatal(err)
		}
		dilocoRound(t, theta, []*Inner{dil}, []*Batcher{b2}, 1, outer)
	}
	ts, _ := Unflatten(theta, Snapshot(dilM.Params()))
	if err := Load(dilM.Params(), ts); err != nil {
		t.Fatal(err)
	}
	if d := maxDiff(t, syncM.Params(), dilM.Params()); d > 1e-13 {
		t.Fatalf("DiLoCo(H=1) and synchronous AdamW differ by %g", d)
	}
}

// With several workers and a linear inner optimizer (SGD), DiLoCo with H=1, outer lr 1 and
// no momentum is synchronous data-parallel SGD on the averaged gradient.
func TestDiLoCoH1EqualsSyncSGDWorkers(t *testing.T) {
	const workers = 3
	syncM := newSynthModel(t, 2)
	sched := Schedule{Peak: 0.05, Min: 0.05, Warmup: 0, Total: 1}
	inners := make([]*Inner, workers)
	for w := range inners {
		inners[w] = &Inner{Model: newSynthModel(t, 2), Opt: SGD{}, Schedule: sched}
	}
	syncB, dilB := synthBatchers(t, workers), synthBatchers(t, workers)
	theta := Flatten(Snapshot(syncM.Params()))
	outer := &Nesterov{LR: 1, Momentum: 0}
	scratch := newSynthModel(t, 2)
	for r := 0; r < 15; r++ {
		ps := syncM.Params()
		avg := make([][]float64, len(ps))
		for i, p := range ps {
			avg[i] = make([]float64, len(p.Data))
		}
		for w := 0; w < workers; w++ {
			_ = Load(scratch.Params(), Snapshot(ps))
			if _, err := scratch.LossGrad(syncB[w].Next()); err != nil {
				t.Fatal(err)
			}
			for i, p := range scratch.Params() {
				for j, g := range p.Grad {
					avg[i][j] += g / workers
				}
			}
		}
		for i, p := range ps {
			copy(p.Grad, avg[i])
		}
		SGD{}.Step(ps, 0.05)
		dilocoRound(t, theta, inners, dilB, 1, outer)
	}
	ts, _ := Unflatten(theta, Snapshot(scratch.Params()))
	_ = Load(scratch.Params(), ts)
	if d := maxDiff(t, syncM.Params(), scratch.Params()); d > 1e-12 {
		t.Fatalf("DiLoCo(H=1) and synchronous SGD differ by %g", d)
	}
}

// A short DiLoCo run on the synthetic task lowers the held-out loss well below its start.
func TestDiLoCoLearnsSynthetic(t *testing.T) {
	const workers = 4
	inners := make([]*Inner, workers)
	sched := Schedule{Peak: 0.01, Min: 0.001, Warmup: 5, Total: 200}
	for w := range inners {
		inners[w] = &Inner{Model: newSynthModel(t, 3), Opt: NewAdamW(0.01), Schedule: sched, Clip: 1}
	}
	bs := synthBatchers(t, workers)
	eval, _ := NewSynthetic(2560, 8, 4, 42)
	evalB := eval.Batch(Range(2048, 2560)) // samples not dealt to any worker
	m := newSynthModel(t, 3)
	theta := Flatten(Snapshot(m.Params()))
	before, _, _ := m.Eval(evalB)
	outer := &Nesterov{LR: 0.7, Momentum: 0.9}
	for r := 0; r < 10; r++ {
		dilocoRound(t, theta, inners, bs, 10, outer)
	}
	ts, _ := Unflatten(theta, Snapshot(m.Params()))
	_ = Load(m.Params(), ts)
	after, acc, _ := m.Eval(evalB)
	if !(after < 0.5*before) || acc < 0.7 {
		t.Fatalf("held-out loss %v -> %v, accuracy %v: did not learn", before, after, acc)
	}
	t.Logf("held-out loss %.3f -> %.3f, accuracy %.2f", before, after, acc)
}

// AddTo adds tensor by tensor, and refuses mismatched names or sizes without changing
// anything.
func TestAddTo(t *testing.T) {
	dst := []Tensor{{Name: "a", Shape: []int{2}, Data: []float64{1, 2}}, {Name: "b", Shape: []int{1}, Data: []float64{3}}}
	src := []Tensor{{Name: "a", Shape: []int{2}, Data: []float64{0.5, -1}}, {Name: "b", Shape: []int{1}, Data: []float64{4}}}
	if err := AddTo(dst, src); err != nil || dst[0].Data[0] != 1.5 || dst[0].Data[1] != 1 || dst[1].Data[0] != 7 {
		t.Fatalf("AddTo: %v, %v", dst, err)
	}
	for _, bad := range [][]Tensor{
		src[:1],
		{src[0], {Name: "c", Shape: []int{1}, Data: []float64{1}}},
		{src[0], {Name: "b", Shape: []int{2}, Data: []float64{1, 1}}},
	} {
		if err := AddTo(dst, bad); !errors.Is(err, ErrShape) || dst[0].Data[0] != 1.5 || dst[1].Data[0] != 7 {
			t.Fatalf("AddTo of a mismatch: %v, %v", err, dst)
		}
	}
}
