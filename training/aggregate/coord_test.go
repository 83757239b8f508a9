package aggregate

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// tieInputs is n inputs of d values drawn mostly from a few values (-0 and +0 among them),
// so that columns have many ties, with weights of the given kind.
func tieInputs(rng *rand.Rand, n, d int, weights string) []Input {
	few := []float64{math.Copysign(0, -1), 0, 1, -1, 0.1, math.SmallestNonzeroFloat64, -2 * math.SmallestNonzeroFloat64, math.MaxFloat64, -math.MaxFloat64}
	spread := 1 + rng.IntN(len(few)) // how many of few a trial draws from
	w := []float64{1, 0.1, 3, 1e300}[rng.IntN(4)]
	xs := make([]Input, n)
	for i := range xs {
		xs[i] = Input{ID: fmt.Sprintf("peer-%03d", i), Weight: w, Vec: make([]float64, d)}
		switch weights {
		case "integer":
			xs[i].Weight = float64(1 + rng.IntN(4))
		case "random":
			xs[i].Weight = 0.01 + rng.Float64()
		case "one apart":
			if i == rng.IntN(n) {
				xs[i].Weight = math.Nextafter(w, 2*w)
			}
		}
		for j := range xs[i].Vec {
			if rng.IntN(4) == 0 {
				xs[i].Vec[j] = rng.NormFloat64()
			} else {
				xs[i].Vec[j] = few[rng.IntN(spread)]
			}
		}
	}
	return xs
}

func sameBits(t *testing.T, what string, got, want []float64) {
	t.Helper()
	for j := range want {
		if math.Float64bits(got[j]) != math.Float64bits(want[j]) {
			t.Fatalf("%s: coordinate %d is %v (%#x), the reference gives %v (%#x)", what, j, got[j], math.Float64bits(got[j]), want[j], math.Float64bits(want[j]))
		}
	}
}

// The coordinate-wise statistics give the reference's bits (ref_test.go: an insertion sort
// of every column) on columns full of ties and of both zeros, with equal and unequal
// weights.
func TestCoordwiseSameBitsAsReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, n := range []int{1, 2, 3, 4, 5, 7, 8, 16, 17, 33, 100} {
		for _, d := range []int{1, 3, block - 1, block, block + 1, 3*block + 8} {
			for _, weights := range []string{"equal", "one apart", "integer", "random"} {
				for trial := range 4 {
					xs := tieInputs(rng, n, d, weights)
					what := fmt.Sprintf("n=%d d=%d %s weights, trial %d", n, d, weights, trial)
					sameBits(t, what+": median", median(xs), refMedian(xs))
					for k := 0; 2*k < n; k += 1 + k/3 {
						sameBits(t, fmt.Sprintf("%s: trimmed mean k=%d", what, k), trimmedMean(xs, k), refTrimmedMean(xs, k))
					}
					sameBits(t, what+": filtered mean", filteredMean(xs), refFilteredMean(xs))
					vals := make([]float64, n)
					for j := range d {
						for i, x := range xs {
							vals[i] = x.Vec[j]
						}
						sameBits(t, fmt.Sprintf("%s: weighted median of coordinate %d", what, j),
							[]float64{weightedMedianOf(xs, vals)}, []float64{refWeightedMedianOf(xs, vals)})
					}
				}
			}
		}
	}
}

// nearInputs is n inputs of d values each a few ulps from one of a few values (zero among
// them, so that subnormals of both signs and both zeros come up), with weights of the given
// kind: columns whose values differ only in their low bits, where load's keys order by
// position and the groups are sorted again.
func nearInputs(rng *rand.Rand, n, d int, weights string) []Input {
	few := []float64{0, 1, -1, 0.1, math.MaxFloat64}
	spread := 1 + rng.IntN(len(few))
	ulps := 1 + rng.IntN(600) // more than the position bits of 200 inputs
	xs := make([]Input, n)
	for i := range xs {
		xs[i] = Input{ID: fmt.Sprintf("peer-%03d", i), Weight: unequalWeight(rng, n, i, weights), Vec: make([]float64, d)}
		for j := range xs[i].Vec {
			v := few[rng.IntN(spread)]
			if v == 0 {
				v = float64(rng.IntN(2*ulps+1)-ulps) * math.SmallestNonzeroFloat64
				if v == 0 && rng.IntN(2) == 0 {
					v = math.Copysign(0, -1)
				}
			} else {
				v = math.Float64frombits(math.Float64bits(v) - uint64(rng.IntN(ulps)))
			}
			xs[i].Vec[j] = v
		}
	}
	return xs
}

// unequalWeight is input i's weight: "ulps" a few ulps from one weight, "one apart" one
// input one ulp above the others, "integer" 1 to 4, "random" in [0.01, 1.01).
func unequalWeight(rng *rand.Rand, n, i int, kind string) float64 {
	switch kind {
	case "ulps":
		return math.Float64frombits(math.Float64bits(0.1) + uint64(rng.IntN(4)))
	case "one apart":
		if i == n/2 {
			return math.Nextafter(0.1, 1)
		}
		return 0.1
	case "integer":
		return float64(1 + rng.IntN(4))
	}
	return 0.01 + rng.Float64()
}

// patternInputs is n inputs of d values whose columns are the orders that defeat some
// quicksorts (sorted, reversed, organ pipe, sawtooth, a median-of-3 killer, all equal),
// each column one of them, scaled and shifted by the coordinate.
func patternInputs(rng *rand.Rand, n, d int, weights string) []Input {
	killer := make([]float64, n) // Musser's median-of-3 killer, for even n
	for i := 1; 2*i <= n; i++ {
		if i%2 == 1 {
			killer[i-1] = float64(i)
		} else {
			killer[i-1] = float64(n/2 + i - 1)
		}
		killer[n/2+i-1] = float64(2 * i)
	}
	patterns := []func(i int) float64{
		func(i int) float64 { return float64(i) },
		func(i int) float64 { return float64(n - i) },
		func(i int) float64 { return float64(min(i, n-i)) },
		func(i int) float64 { return float64(i % 7) },
		func(i int) float64 { return killer[i] },
		func(i int) float64 { return 0 },
	}
	xs := make([]Input, n)
	for i := range xs {
		xs[i] = Input{ID: fmt.Sprintf("peer-%03d", i), Weight: unequalWeight(rng, n, i, weights), Vec: make([]float64, d)}
		for j := range xs[i].Vec {
			xs[i].Vec[j] = patterns[j%len(patterns)](i)*float64(1+j/len(patterns)) - float64(j)
		}
	}
	return xs
}

// With unequal weights, load sorts every column as the reference does (by value, ties by
// position, -0 equal to +0), entry for entry, and the statistics give the reference's bits,
// on columns of ties, of values a few ulps apart, and of orders chosen against quicksorts.
func TestUnequalWeightsSameBitsAsReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	gens := []struct {
		name string
		f    func(rng *rand.Rand, n, d int, weights string) []Input
	}{
		{"ties", tieInputs},
		{"near", nearInputs},
		{"patterns", patternInputs},
	}
	for _, n := range []int{1, 2, 3, 4, 5, 7, 8, 12, 13, 16, 17, 33, 64, 100, 200} {
		for _, d := range []int{1, block + 1} {
			for _, g := range gens {
				for _, weights := range []string{"ulps", "one apart", "integer", "random"} {
					for trial := range 2 {
						xs := g.f(rng, n, d, weights)
						if g.name == "ties" { // tieInputs has weights of its own kinds
							for i := range xs {
								xs[i].Weight = unequalWeight(rng, n, i, weights)
							}
						}
						what := fmt.Sprintf("n=%d d=%d %s values, %s weights, trial %d", n, d, g.name, weights, trial)
						c, keys, ref := make(column, n), make([]uint64, n), newRefColumn(n)
						vals := make([]float64, n)
						for j := range d {
							for i, x := range xs {
								vals[i] = x.Vec[j]
							}
							c.load(xs, vals, keys)
							ref.load(xs, j)
							for r, e := range c {
								if math.Float64bits(e.v) != math.Float64bits(ref.v[r]) || math.Float64bits(e.w) != math.Float64bits(ref.w[r]) {
									t.Fatalf("%s: coordinate %d: entry %d of the sorted column is (%v, %v), the reference has (%v, %v)", what, j, r, e.v, e.w, ref.v[r], ref.w[r])
								}
							}
						}
						sameBits(t, what+": median", median(xs), refMedian(xs))
						for k := 0; 2*k < n; k += 1 + k/3 {
							sameBits(t, fmt.Sprintf("%s: trimmed mean k=%d", what, k), trimmedMean(xs, k), refTrimmedMean(xs, k))
						}
						sameBits(t, what+": filtered mean", filteredMean(xs), refFilteredMean(xs))
					}
				}
			}
		}
	}
}

// sortKeys sorts, whatever the order it is given, and so does its heapsort, which it falls
// back to when its pivots split badly.
func TestSortKeys(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	for _, n := range []int{0, 1, 2, 3, short, short + 1, 33, 200, 1000} {
		for _, order := range []string{"random", "sorted", "reversed", "organ pipe", "few"} {
			a := make([]uint64, n)
			for i := range a {
				switch order {
				case "random":
					a[i] = rng.Uint64()
				case "sorted":
					a[i] = uint64(i)
				case "reversed":
					a[i] = uint64(n - i)
				case "organ pipe":
					a[i] = uint64(min(i, n-i))
				case "few":
					a[i] = uint64(rng.IntN(3))
				}
			}
			want := slices.Sorted(slices.Values(a))
			for _, sort := range []struct {
				name string
				f    func([]uint64)
			}{{"sortKeys", sortKeys}, {"heapSort", heapSort}, {"introSort at depth 0", func(a []uint64) { introSort(a, 0) }}} {
				got := slices.Clone(a)
				sort.f(got)
				if !slices.Equal(got, want) {
					t.Fatalf("%s of %d %s keys: %v, want %v", sort.name, n, order, got, want)
				}
			}
		}
	}
}

// sortKey orders the finite values as they compare: a ladder of values through the
// subnormals and both zeros.
func TestSortKeyOrder(t *testing.T) {
	tiny := math.SmallestNonzeroFloat64
	ladder := []float64{-math.MaxFloat64, -1, -0x1p-1022, -0x1p-1022 + tiny, -2 * tiny, -tiny, 0, tiny, 2 * tiny, 0x1p-1022 - tiny, 0x1p-1022, 1, math.Nextafter(1, 2), math.MaxFloat64}
	for i, a := range ladder {
		for _, b := range ladder[i+1:] {
			if !(sortKey(a) < sortKey(b)) {
				t.Errorf("sortKey(%v) = %#x is not below sortKey(%v) = %#x", a, sortKey(a), b, sortKey(b))
			}
		}
	}
	if sortKey(math.Copysign(0, -1)) != sortKey(0) {
		t.Errorf("sortKey(-0) = %#x, sortKey(+0) = %#x", sortKey(math.Copysign(0, -1)), sortKey(0))
	}
}
