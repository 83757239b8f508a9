package aggregate

import (
	"math/rand/v2"
	"testing"
)

// Each method on 8 contributors of 1M coordinates (a ~1M-parameter model).
func BenchmarkAggregate(b *testing.B) {
	in := randInputs(rand.New(rand.NewPCG(9, 9)), 8, 1<<20, false)
	for _, cfg := range methods[:4] {
		b.Run(string(cfg.Method), func(b *testing.B) {
			for b.Loop() {
				if _, err := Aggregate(cfg, in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	for _, m := range []Method{NormClip, FilteredMean} {
		b.Run(string(m), func(b *testing.B) {
			for b.Loop() {
				if _, err := Aggregate(Config{Method: m}, in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
