package training

import (
	"math"
	"math/rand/v2"
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
