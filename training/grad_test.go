package training

import (
	"math"
	"math/rand/v2"
	"testing"
)

// numGrad checks analytic gradients against central differences of f at the values in x.
func numGrad(t *testing.T, name string, x, analytic []float64, f func() float64) {
	t.Helper()
	const eps = 1e-6
	for i := range x {
		orig := x[i]
		x[i] = orig + eps
		fp := f()
		x[i] = orig - eps
		fm := f()
		x[i] = orig
		num := (fp - fm) / (2 * eps)
		if d := math.Abs(num - analytic[i]); d > 1e-6+1e-5*math.Abs(num) {
			t.Fatalf("%s[%d]: analytic %.10g, numeric %.10g", name, i, analytic[i], num)
		}
	}
}

func randSlice(rng *rand.Rand, n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = rng.NormFloat64()
	}
	return s
}

// dot is the scalar test loss sum(y·r) whose gradient with respect to y is r.
func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func TestLinearGrad(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	n, in, out := 3, 4, 5
	l := newLinear("l", in, out)
	copy(l.W.Data, randSlice(rng, in*out))
	copy(l.B.Data, randSlice(rng, out))
	x, r := randSlice(rng, n*in), randSlice(rng, n*out)
	y := make([]float64, n*out)
	f := func() float64 { l.forward(x, n, y); return dot(y, r) }
	f()
	dx := make([]float64, n*in)
	l.backward(x, r, n, dx)
	numGrad(t, "W", l.W.Data, l.W.Grad, f)
	numGrad(t, "b", l.B.Data, l.B.Grad, f)
	numGrad(t, "x", x, dx, f)
}

func TestEmbeddingGrad(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	e := newEmbedding("e", 6, 3, 4)
	copy(e.Table.Data, randSlice(rng, 18))
	n := 2
	tokens := []int{0, 5, 5, 2, 1, 1, 3, 0} // repeats exercise accumulation
	r := randSlice(rng, n*4*3)
	y := make([]float64, n*4*3)
	f := func() float64 { e.forward(tokens, n, y); return dot(y, r) }
	f()
	e.backward(tokens, n, r)
	numGrad(t, "table", e.Table.Data, e.Table.Grad, f)
}

func TestReLUGrad(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	x := randSlice(rng, 20)
	r := randSlice(rng, 20)
	y := make([]float64, 20)
	f := func() float64 { copy(y, x); reluForward(y); return dot(y, r) }
	f()
	dy := append([]float64(nil), r...)
	reluBackward(y, dy)
	numGrad(t, "x", x, dy, f)
}

func TestSoftmaxXentGrad(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	n, c := 4, 5
	logits := randSlice(rng, n*c)
	labels := []int{0, 4, 2, 2}
	f := func() float64 { l, _ := softmaxXent(logits, labels, n, c, nil); return l }
	d := make([]float64, n*c)
	loss, _ := softmaxXent(logits, labels, n, c, d)
	if loss <= 0 {
		t.Fatalf("loss %v, want positive", loss)
	}
	numGrad(t, "logits", logits, d, f)
}

func checkModelGrad(t *testing.T, m Model, b Batch) {
	t.Helper()
	if _, err := m.LossGrad(b); err != nil {
		t.Fatal(err)
	}
	f := func() float64 {
		l, _, err := m.Eval(b)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	for _, p := range m.Params() {
		numGrad(t, p.Name, p.Data, append([]float64(nil), p.Grad...), f)
	}
}

func TestCharLMGrad(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	m, err := NewCharLM(CharLMSize{Vocab: 7, Context: 3, Embed: 2, Hidden: []int{5, 4}}, rng)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range m.Params() { // non-zero biases so every path is exercised
		if len(p.Shape) == 1 {
			copy(p.Data, randSlice(rng, len(p.Data)))
		}
	}
	b := Batch{N: 3, Tokens: []int{0, 1, 2, 6, 6, 3, 4, 5, 0}, Y: []int{3, 0, 6}}
	checkModelGrad(t, m, b)
}

func TestClassifierGrad(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	m, err := NewClassifier(6, []int{5, 4}, 3, rng)
	if err != nil {
		t.Fatal(err)
	}
	b := Batch{N: 4, X: randSlice(rng, 24), Y: []int{0, 1, 2, 1}}
	checkModelGrad(t, m, b)
}

func TestModelRejectsBadBatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	lm, _ := NewCharLM(CharLMSize{Vocab: 4, Context: 2, Embed: 2, Hidden: []int{3}}, rng)
	cl, _ := NewClassifier(3, []int{2}, 2, rng)
	cases := []struct {
		m Model
		b Batch
	}{
		{lm, Batch{N: 1, Tokens: []int{0, 9}, Y: []int{0}}},   // token out of range
		{lm, Batch{N: 1, Tokens: []int{0}, Y: []int{0}}},      // short window
		{lm, Batch{N: 1, Tokens: []int{0, 1}, Y: []int{4}}},   // label out of range
		{cl, Batch{N: 2, X: make([]float64, 6), Y: []int{0}}}, // missing label
		{cl, Batch{N: 1, X: make([]float64, 2), Y: []int{0}}}, // short features
		{cl, Batch{}},
	}
	for i, c := range cases {
		if _, err := c.m.LossGrad(c.b); err == nil {
			t.Errorf("case %d: LossGrad accepted a bad batch", i)
		}
		if _, _, err := c.m.Eval(c.b); err == nil {
			t.Errorf("case %d: Eval accepted a bad batch", i)
		}
	}
}
