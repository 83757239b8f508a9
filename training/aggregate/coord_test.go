package aggregate

import (
	"fmt"
	"math"
	"math/rand/v2"
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
