package aggregate

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Every rule maps a coordinate that is zero in every input to +0: a tensor that no
// contribution carries in a round (compress.Config.DenseEvery) counts as zero in that
// round's aggregate, whatever the rule.
func TestZeroCoordinateStaysZero(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 2))
	for _, cfg := range methods {
		for trial := 0; trial < 10; trial++ {
			in := randInputs(rng, 2+rng.IntN(7), 12, trial%2 == 0)
			for _, x := range in {
				x.Vec[3], x.Vec[7], x.Vec[8] = 0, 0, 0
			}
			out := mustAggregate(t, cfg, in)
			for _, j := range []int{3, 7, 8} {
				if out[j] != 0 || math.Signbit(out[j]) {
					t.Fatalf("%+v trial %d: coordinate %d is %v", cfg, trial, j, out[j])
				}
			}
		}
	}
}
