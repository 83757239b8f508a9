package compress

import (
	"errors"
	"fmt"
	"math"
	"slices"
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
		{Config{RankMin: 5, RankMax: 5, FactorBits: 1, BlockSize: 16}, []int{96, 130}},
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

// readNorm is what a round's contribution reader checks: every value of m read in the
// model's order (like), and the sum of their squares in that order; ok is false when a
// value is not finite.
func readNorm(t *testing.T, m *Message, like []Tensor) (ss float64, ok bool) {
	t.Helper()
	rd, err := m.NewRangeReader(like)
	if err != nil {
		t.Fatal(err)
	}
	vals := make([]float64, rd.Len())
	if err := rd.Read(0, rd.Len(), vals); err != nil {
		return 0, false
	}
	return sumSquares(vals), true
}

// SurelyWithinNorm never clears a message that reading every value would refuse: over
// messages with and without shared bases, of several shapes, ranks and scales, and with a
// scale made NaN, at every bound around the norm the reader sums; and it clears the
// ordinary message under a bound with room (or none), so that the reader can skip the read.
func TestSurelyWithinNormImpliesTheReadPasses(t *testing.T) {
	rng := newRand(43)
	sharedMsgs := 0
	cases := []struct {
		cfg    Config
		shapes [][]int
	}{
		{Config{RankMin: 1, RankMax: 4, MinLowRank: 16}, [][]int{{64, 48}, {48}}},
		{Config{RankMin: 1, RankMax: 8, FactorBits: 2, DenseBits: 4, MinLowRank: 16, SharedRank: 6}, [][]int{{96, 40}, {40}, {30, 50}}},
		{Config{RankMin: 2, RankMax: 20, MinLowRank: 16, SharedRank: 16, ByteBudget: 3000}, [][]int{{130, 33}, {33}, {7, 5}}},
	}
	for ci, c := range cases {
		for _, scale := range []float64{0, 1e-150, 1e-3, 1, 1e20, 1e29} {
			names := make([]string, len(c.shapes))
			like := make([]Tensor, len(c.shapes))
			agg := make([]Tensor, len(c.shapes))
			for i, s := range c.shapes {
				names[i] = fmt.Sprint("t", i)
				like[i] = Tensor{Name: names[i], Shape: s}
				agg[i] = randTensor(rng, names[i], 1, s...)
				if len(s) == 2 {
					agg[i] = rankK(rng, names[i], s[0], s[1], 5)
				}
			}
			bases, err := DeriveBases(mustEncoder(t, c.cfg).Config(), agg)
			if err != nil {
				t.Fatal(err)
			}
			e := mustEncoder(t, c.cfg)
			for r := range 3 {
				ts := make([]Tensor, len(c.shapes))
				for i, s := range c.shapes {
					ts[i] = randTensor(rng, names[i], scale, s...)
				}
				m, err := e.EncodeRoundShared(uint64(r), ts, bases)
				if err != nil {
					t.Fatal(err)
				}
				if c.cfg.SharedRank > 0 {
					shared, unbound := false, *m // as a receiver decodes it
					unbound.pieces = slices.Clone(m.pieces)
					for i := range unbound.pieces {
						shared = shared || unbound.pieces[i].SRank > 0
						unbound.pieces[i].basis = nil
					}
					if shared && unbound.SurelyWithinNorm(math.Inf(1)) {
						t.Fatalf("case %d: cleared shared coordinates without their basis", ci)
					}
					if shared {
						sharedMsgs++
					}
					if m, err = m.WithBases(bases); err != nil {
						t.Fatal(err)
					}
				}
				ss, ok := readNorm(t, m, like)
				norm := math.Sqrt(ss)
				for _, b := range probeNorms(norm) {
					if m.SurelyWithinNorm(b) && (!ok || !(norm <= b)) {
						t.Fatalf("case %d scale %g round %d: cleared for %v, the read gives norm %v (finite %v)", ci, scale, r, b, norm, ok)
					}
				}
				if scale <= 1e20 && (!m.SurelyWithinNorm(math.Inf(1)) || !m.SurelyWithinNorm(2*norm+1e-300)) {
					t.Fatalf("case %d scale %g round %d: did not clear an ordinary message (norm %v)", ci, scale, r, norm)
				}
				for i := range m.pieces { // a NaN scale in any piece: never cleared
					bad := *m
					bad.pieces = slices.Clone(m.pieces)
					p := &bad.pieces[i]
					sc := &p.Scales
					if p.lowRank() {
						sc = &p.QScales
					}
					if len(*sc) < 2 {
						continue
					}
					*sc = slices.Clone(*sc)
					(*sc)[0], (*sc)[1] = 0xc0, 0x7f
					if bad.SurelyWithinNorm(math.Inf(1)) {
						t.Fatalf("case %d: cleared a message with a NaN scale in %q", ci, p.Name)
					}
				}
			}
		}
	}
	if sharedMsgs == 0 {
		t.Fatal("no message with shared coordinates")
	}
}
