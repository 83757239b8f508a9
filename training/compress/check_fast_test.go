package compress

import (
	"errors"
	"math"
	"testing"
)

// verdictsAgree fails unless Check's verdict on m for maxNorm is checkValues's: both pass,
// or both fail with the same class of error.
func verdictsAgree(t *testing.T, m *Message, shapes map[string][]int, maxNorm float64) {
	t.Helper()
	got := m.Check(shapes, maxNorm)
	want := m.checkShapes(shapes)
	if want == nil {
		want = m.checkValues(maxNorm)
	}
	for _, class := range []error{nil, ErrShape, ErrNotFinite, ErrNormTooLarge} {
		if class == nil {
			if (got == nil) != (want == nil) {
				t.Fatalf("maxNorm %v: Check says %v, the value-by-value check %v", maxNorm, got, want)
			}
			continue
		}
		if errors.Is(got, class) != errors.Is(want, class) {
			t.Fatalf("maxNorm %v: Check says %v, the value-by-value check %v", maxNorm, got, want)
		}
	}
}

// probeNorms are bounds around a message's exact norm, from far under to far over,
// including the neighbouring floats: where the factors alone cannot decide, Check must
// fall back to the value-by-value check and give its verdict.
func probeNorms(norm float64) []float64 {
	out := []float64{math.Inf(1), math.NaN(), 0, -1, math.SmallestNonzeroFloat64, math.MaxFloat64}
	for _, f := range []float64{1e-3, 0.5, 1 - 1e-6, 1 - 1e-9, 1 - 1e-12, 1, 1 + 1e-12, 1 + 1e-9, 1 + 1e-6, 2, 1e3} {
		out = append(out, norm*f)
	}
	return append(out, math.Nextafter(norm, 0), math.Nextafter(norm, math.Inf(1)))
}

// TestCheckFromFactorsAgreesWithTheValues: over messages of several shapes, ranks, factor
// widths and scales (from 1e-150 to 1e20, and zero), Check's verdict is that of the check of
// every reconstructed value, at every bound around the exact norm.
func TestCheckFromFactorsAgreesWithTheValues(t *testing.T) {
	rng := newRand(41)
	cases := []struct {
		cfg   Config
		shape []int
	}{
		{Config{RankMin: 1, RankMax: 1}, []int{64, 48}},
		{Config{RankMin: 2, RankMax: 2}, []int{256, 192}},
		{Config{RankMin: 4, RankMax: 4, FactorBits: 2, BlockSize: 8}, []int{96, 130}},
		{Config{RankMin: 8, RankMax: 8}, []int{200, 33}},
		{Config{RankMin: 3, RankMax: 3, MinLowRank: 16}, []int{7, 5}},
	}
	for _, c := range cases {
		for _, scale := range []float64{0, 1e-150, 1e-3, 1, 1e20} {
			e := mustEncoder(t, c.cfg)
			ts := []Tensor{randTensor(rng, "w", scale, c.shape...), randTensor(rng, "b", scale, c.shape[1])}
			m := mustEncode(t, e, ts)
			shapes := map[string][]int{"w": c.shape, "b": {c.shape[1]}}
			ss, err := m.valuesSumSquares()
			if err != nil {
				t.Fatal(err)
			}
			for _, maxNorm := range probeNorms(math.Sqrt(ss)) {
				verdictsAgree(t, m, shapes, maxNorm)
			}
			verdictsAgree(t, m, map[string][]int{"w": c.shape}, math.Inf(1)) // a tensor it may not send
		}
	}
}

// TestGramSumSquaresBoundsTheRowByRowSum: the sum of squares from the Gram matrices and the
// row-by-row one are within the slack it reports of each other, also where the factors'
// columns nearly cancel, and it declines non-finite factors and ones whose product could
// overflow.
func TestGramSumSquaresBoundsTheRowByRowSum(t *testing.T) {
	rng := newRand(42)
	for trial := range 200 {
		h, cols, r := 1+rng.IntN(40), 1+rng.IntN(40), 1+rng.IntN(6)
		f := &factors{h: h, cols: cols, p: make([]float64, h*r), qt: make([]float64, cols*r), pr: make([]float64, r)}
		scale := math.Pow(10, float64(rng.IntN(120)-60))
		for i := range f.p {
			f.p[i] = scale * rng.NormFloat64()
		}
		for i := range f.qt {
			f.qt[i] = rng.NormFloat64()
		}
		if trial%3 == 0 && r > 1 { // column 1 of P nearly -column 0, of Q nearly column 0
			for i := range h {
				f.p[h+i] = -f.p[i] * (1 + 1e-12*rng.NormFloat64())
			}
			for j := range cols {
				f.qt[cols+j] = f.qt[j] * (1 + 1e-12*rng.NormFloat64())
			}
		}
		ss, slack, ok := f.gramSumSquares()
		if !ok {
			t.Fatalf("trial %d: declined finite factors of scale %g", trial, scale)
		}
		row := make([]float64, cols)
		var rows float64
		for i := range h {
			f.row(row, i)
			rows += sumSquares(row)
		}
		if math.Abs(ss-rows) > slack {
			t.Fatalf("trial %d (%dx%d rank %d, scale %g): Gram %g, rows %g, slack %g", trial, h, cols, r, scale, ss, rows, slack)
		}
	}
	f := &factors{h: 2, cols: 2, p: []float64{1, 2}, qt: []float64{3, math.NaN()}, pr: make([]float64, 1)}
	if _, _, ok := f.gramSumSquares(); ok {
		t.Fatal("took a NaN factor")
	}
	f.qt[1] = math.MaxFloat64 / 2
	if _, _, ok := f.gramSumSquares(); ok {
		t.Fatal("took factors whose product overflows")
	}
}
