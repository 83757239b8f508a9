package compress

import (
	"math"
	"slices"
	"testing"
)

// Naive references of the basis kernels: each entry a sum in the documented order, every
// product rounded, the sums kept in the output.

func mulABRef(a, b []float64, m, n, k int) []float64 {
	out := make([]float64, m*k)
	for i := 0; i < m; i++ {
		oi := out[i*k : (i+1)*k]
		for l, av := range a[i*n : (i+1)*n] {
			bl := b[l*k : (l+1)*k]
			for c, bv := range bl {
				oi[c] += float64(av * bv)
			}
		}
	}
	return out
}

func mulAtBRef(a, y []float64, m, n, k int) []float64 {
	out := make([]float64, n*k)
	for i := 0; i < m; i++ {
		ai, yi := a[i*n:(i+1)*n], y[i*k:(i+1)*k]
		for l, av := range ai {
			ol := out[l*k : (l+1)*k]
			for c, yv := range yi {
				ol[c] += float64(av * yv)
			}
		}
	}
	return out
}

func gramRef(y []float64, m, k int) []float64 {
	g := make([]float64, k*k)
	for i := 0; i < m; i++ {
		yi := y[i*k : (i+1)*k]
		for a, ya := range yi {
			ga := g[a*k : (a+1)*k]
			for b, yb := range yi {
				ga[b] += float64(ya * yb)
			}
		}
	}
	return g
}

// The blocked basis kernels give the naive references' bits, over shapes that exercise
// every tail (odd rows, columns not a multiple of the block, blocks of rows of A), on values
// with zeros and negative zeros among them.
func TestBasisKernelsMatchReferences(t *testing.T) {
	rng := newRand(41)
	vals := func(n int) []float64 {
		v := randTensor(rng, "", 1, n).Data
		for i := range v {
			switch rng.IntN(8) {
			case 0:
				v[i] = 0
			case 1:
				v[i] = math.Copysign(0, -1)
			case 2:
				v[i] *= 1e-200
			}
		}
		return v
	}
	same := func(what string, m, n, k int, got, want []float64) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s %d×%d×%d: %d values, want %d", what, m, n, k, len(got), len(want))
		}
		for i := range got {
			if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
				t.Fatalf("%s %d×%d×%d: value %d is %v, want %v", what, m, n, k, i, got[i], want[i])
			}
		}
	}
	for _, d := range [][3]int{{1, 1, 1}, {2, 3, 4}, {5, 7, 3}, {64, 9, 6}, {65, 33, 24}, {130, 17, 25}, {200, 64, 7}, {129, 1, 2}} {
		m, n, k := d[0], d[1], d[2]
		a, b, y := vals(m*n), vals(n*k), vals(m*k)
		same("mulAB", m, n, k, mulAB(a, b, m, n, k), mulABRef(a, b, m, n, k))
		same("mulAtB", m, n, k, mulAtB(a, y, m, n, k), mulAtBRef(a, y, m, n, k))
		same("gram", m, n, k, gram(y, m, k), gramRef(y, m, k))
	}
}

// addRows and subtractRows give the bits of adding (subtracting) the rows one at a time,
// in order, a row with a zero weight skipped (which a sum that is -0 would tell apart).
func TestAddSubtractRowsMatchOneByOne(t *testing.T) {
	rng := newRand(44)
	for trial := range 300 {
		n, h := 1+rng.IntN(20), rng.IntN(11)
		w, x := make([]float64, h), randTensor(rng, "", 1, h*n).Data
		for r := range w {
			switch rng.IntN(4) {
			case 0:
				w[r] = 0
			case 1:
				w[r] = math.Copysign(0, -1)
			default:
				w[r] = rng.NormFloat64()
			}
		}
		start := randTensor(rng, "", 1, n).Data
		for j := range start {
			if rng.IntN(3) == 0 {
				start[j] = math.Copysign(0, -1)
			}
		}
		for _, sub := range []bool{false, true} {
			want := slices.Clone(start)
			for r, wr := range w {
				if wr == 0 {
					continue
				}
				for j := range want {
					if sub {
						want[j] -= float64(wr * x[r*n+j])
					} else {
						want[j] += float64(wr * x[r*n+j])
					}
				}
			}
			got := slices.Clone(start)
			if sub {
				subtractRows(got, w, x)
			} else {
				addRows(got, w, x)
			}
			if !slices.Equal(floatBitsOf(got), floatBitsOf(want)) {
				t.Fatalf("trial %d (subtract %v, weights %v): %v, want %v", trial, sub, w, got, want)
			}
		}
	}
}
