package compress

import (
	"math"
	"slices"
	"testing"
)

// reconstructRow equals the definition, a cleared row with the rank's products added one
// at a time, bit for bit at every rank, including the sign of zero (a zero factor times a
// negative one is -0, which a sum from a cleared row turns into +0).
func TestReconstructRowMatchesDefinition(t *testing.T) {
	rng := newRand(23)
	const cols = 13
	pick := func() float64 {
		switch rng.IntN(5) {
		case 0:
			return 0
		case 1:
			return math.Copysign(0, -1)
		}
		return rng.NormFloat64()
	}
	for rank := 0; rank <= 11; rank++ {
		for trial := 0; trial < 20; trial++ {
			p, qt := make([]float64, rank), make([]float64, rank*cols)
			for i := range p {
				p[i] = pick()
			}
			for i := range qt {
				qt[i] = pick()
			}
			want := make([]float64, cols)
			for k := range rank {
				for j := range want {
					want[j] = want[j] + float64(p[k]*qt[k*cols+j])
				}
			}
			got := make([]float64, cols)
			for j := range got {
				got[j] = math.NaN() // reconstructRow must write every value
			}
			reconstructRow(got, p, qt)
			if !slices.Equal(floatBitsOf(got), floatBitsOf(want)) {
				t.Fatalf("rank %d: %v, want %v", rank, got, want)
			}
		}
	}
}
