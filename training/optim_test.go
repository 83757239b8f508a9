package training

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestAdamWMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	w := newParam("w", 2, 3)
	b := newParam("b", 3)
	copy(w.Data, randSlice(rng, 6))
	copy(b.Data, randSlice(rng, 3))
	ps := []*Param{w, b}
	// naive reference, written out directly from the paper's algorithm
	refW, refB := append([]float64(nil), w.Data...), append([]float64(nil), b.Data...)
	m := [][]float64{make([]float64, 6), make([]float64, 3)}
	v := [][]float64{make([]float64, 6), make([]float64, 3)}
	opt := NewAdamW(0.1)
	for step := 1; step <= 5; step++ {
		lr := 0.01 * float64(step)
		copy(w.Grad, randSlice(rng, 6))
		copy(b.Grad, randSlice(rng, 3))
		for k, ref := range [][]float64{refW, refB} {
			g := ps[k].Grad
			for i := range ref {
				mi := 0.9*m[k][i] + 0.1*g[i]
				vi := 0.95*v[k][i] + 0.05*g[i]*g[i]
				m[k][i], v[k][i] = float64(float32(mi)), float64(float32(vi)) // kept in float32
				mh := mi / (1 - math.Pow(0.9, float64(step)))
				vh := vi / (1 - math.Pow(0.95, float64(step)))
				wd := 0.0
				if k == 0 {
					wd = 0.1
				}
				ref[i] = ref[i] - lr*wd*ref[i] - lr*mh/(math.Sqrt(vh)+1e-8)
			}
		}
		opt.Step(ps, lr)
		for k, ref := range [][]float64{refW, refB} {
			for i := range ref {
				if d := math.Abs(ref[i] - ps[k].Data[i]); d > 1e-14 {
					t.Fatalf("step %d param %d[%d]: got %v want %v", step, k, i, ps[k].Data[i], ref[i])
				}
			}
		}
	}
}

func TestNesterovMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	theta := randSlice(rng, 5)
	ref := append([]float64(nil), theta...)
	buf := make([]float64, 5)
	n := &Nesterov{LR: 0.7, Momentum: 0.9}
	for step := 0; step < 4; step++ {
		g := randSlice(rng, 5)
		for i := range ref {
			buf[i] = 0.9*buf[i] + g[i]
			ref[i] -= 0.7 * (g[i] + 0.9*buf[i])
		}
		if err := n.Step(theta, g); err != nil {
			t.Fatal(err)
		}
		for i := range ref {
			if math.Abs(ref[i]-theta[i]) > 1e-14 {
				t.Fatalf("step %d [%d]: got %v want %v", step, i, theta[i], ref[i])
			}
		}
	}
	if err := n.Step(theta, make([]float64, 4)); err == nil {
		t.Fatal("Step accepted a gradient of the wrong length")
	}
}

// With momentum 0 the outer step is θ − lr·g to the bit and keeps no buffer; with
// KeepLast the buffer holds the last g and θ is the same. A buffer restored for plain SGD
// is refused, not silently carried into states.
func TestNesterovWithoutMomentumKeepsNoBuffer(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	theta := randSlice(rng, 7)
	kept := append([]float64(nil), theta...)
	plain, keep := &Nesterov{LR: 0.35}, &Nesterov{LR: 0.35, KeepLast: true}
	for step := 0; step < 3; step++ {
		g := randSlice(rng, 7)
		want := append([]float64(nil), theta...)
		for i := range want {
			want[i] -= 0.35 * g[i]
		}
		if err := plain.Step(theta, g); err != nil {
			t.Fatal(err)
		}
		if err := keep.Step(kept, g); err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if math.Float64bits(theta[i]) != math.Float64bits(want[i]) || math.Float64bits(kept[i]) != math.Float64bits(want[i]) {
				t.Fatalf("step %d [%d]: %v and %v, want %v", step, i, theta[i], kept[i], want[i])
			}
		}
		if plain.MomentumBuffer() != nil || !slices.Equal(keep.MomentumBuffer(), g) {
			t.Fatalf("step %d: buffers %v and %v", step, plain.MomentumBuffer(), keep.MomentumBuffer())
		}
	}
	plain.SetMomentumBuffer(make([]float64, 7))
	if err := plain.Step(theta, make([]float64, 7)); err == nil {
		t.Fatal("plain SGD stepped with a momentum buffer")
	}
}

// Step over the whole vector is StepAt over its ranges, in any order, to the bit, with
// momentum or without; ranges past the vector are refused.
func TestNesterovStepAtIsStepByRanges(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, mu := range []float64{0, 0.9} {
		theta := randSlice(rng, 11)
		ranged := append([]float64(nil), theta...)
		whole, parts := &Nesterov{LR: 0.7, Momentum: mu}, &Nesterov{LR: 0.7, Momentum: mu}
		for step := 0; step < 3; step++ {
			g := randSlice(rng, 11)
			if err := whole.Step(theta, g); err != nil {
				t.Fatal(err)
			}
			for _, r := range [][2]int{{6, 11}, {0, 2}, {2, 6}} {
				if err := parts.StepAt(ranged, r[0], g[r[0]:r[1]]); err != nil {
					t.Fatal(err)
				}
			}
			for i := range theta {
				if math.Float64bits(theta[i]) != math.Float64bits(ranged[i]) {
					t.Fatalf("momentum %v, step %d [%d]: %v by ranges, %v whole", mu, step, i, ranged[i], theta[i])
				}
			}
		}
		if err := parts.StepAt(ranged, 9, make([]float64, 3)); err == nil {
			t.Fatal("StepAt took a range past the vector")
		}
	}
}

func TestScheduleKnownPoints(t *testing.T) {
	s := Schedule{Peak: 1, Min: 0.1, Warmup: 10, Total: 110}
	cases := []struct {
		step int
		want float64
	}{
		{0, 0.1}, {4, 0.5}, {9, 1}, {10, 1}, {60, 0.55}, {110, 0.1}, {500, 0.1},
		{35, 0.1 + 0.45*(1+math.Cos(math.Pi/4))},
	}
	for _, c := range cases {
		if got := s.At(c.step); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("At(%d) = %v, want %v", c.step, got, c.want)
		}
	}
}

func TestClipGradNorm(t *testing.T) {
	p := newParam("p", 2)
	p.Grad[0], p.Grad[1] = 3, 4
	if n := ClipGradNorm([]*Param{p}, 1); n != 5 {
		t.Fatalf("norm %v, want 5", n)
	}
	if math.Abs(p.Grad[0]-0.6) > 1e-15 || math.Abs(p.Grad[1]-0.8) > 1e-15 {
		t.Fatalf("clipped to %v", p.Grad)
	}
	ClipGradNorm([]*Param{p}, 10)
	if math.Abs(p.Grad[0]-0.6) > 1e-15 {
		t.Fatalf("small gradient changed to %v", p.Grad)
	}
}
