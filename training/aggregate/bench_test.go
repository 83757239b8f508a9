package aggregate

import (
	"fmt"
	"math/rand/v2"
	"slices"
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

// The coordinate-wise median and filtered_mean on n contributors of 1M coordinates, all of
// weight 1 (as the bench command's nodes are), and the reference (ref_test.go) in the same
// run, for a ratio that the machine's load shifts less than two runs. The unequal/ ones
// give the contributors weights in [0.5, 1.5) (as stakes that differ do), which sort every
// column, and add the trimmed mean (k = n/10), which does too.
func BenchmarkCoordwise(b *testing.B) {
	const d = 1 << 20
	type bench struct {
		name string
		f    func()
	}
	for _, n := range []int{4, 16, 64, 100} {
		xs := randInputs(rand.New(rand.NewPCG(uint64(n), 7)), n, d, false)
		for i := range xs {
			xs[i].Weight = 1
		}
		for _, bc := range []bench{
			{"median/ref", func() { refMedian(xs) }},
			{"median/new", func() { median(xs) }},
			{"filtered_mean/ref", func() { refFilteredMean(xs) }},
			{"filtered_mean/new", func() { filteredMean(xs) }},
		} {
			b.Run(fmt.Sprintf("n=%d/%s", n, bc.name), func(b *testing.B) {
				for b.Loop() {
					bc.f()
				}
			})
		}
	}
	for _, n := range []int{4, 16, 64, 100, 200} {
		xs := randInputs(rand.New(rand.NewPCG(uint64(n), 8)), n, d, false)
		k := n / 10
		for _, bc := range []bench{
			{"median/ref", func() { refMedian(xs) }},
			{"median/new", func() { median(xs) }},
			{"trimmed_mean/ref", func() { refTrimmedMean(xs, k) }},
			{"trimmed_mean/new", func() { trimmedMean(xs, k) }},
			{"filtered_mean/ref", func() { refFilteredMean(xs) }},
			{"filtered_mean/new", func() { filteredMean(xs) }},
		} {
			b.Run(fmt.Sprintf("unequal/n=%d/%s", n, bc.name), func(b *testing.B) {
				for b.Loop() {
					bc.f()
				}
			})
		}
	}
}

// Sorting one column of 200 inputs of unequal weights (load) in orders chosen against
// quicksorts (patternInputs' columns), in values a few ulps apart (nearInputs: load sorts
// such groups twice) and in random order: the time per column stays within a few times
// the random order's (the organ pipe and the median-of-3 killer, the slowest, 2 to 4
// times in the runs made), where a quadratic sort would take some 200/log2(200) ≈ 26
// times as long. The reference's insertion sort is in the same run.
func BenchmarkSortColumnOrders(b *testing.B) {
	const n = 200
	rng := rand.New(rand.NewPCG(5, 6))
	cols := map[string][]float64{}
	pat := patternInputs(rng, n, 6, "random")
	for j, name := range []string{"sorted", "reversed", "organ_pipe", "sawtooth", "median3_killer", "equal"} {
		cols[name] = make([]float64, n)
		for i, x := range pat {
			cols[name][i] = x.Vec[j]
		}
	}
	near := nearInputs(rng, n, 1, "random")
	cols["near"] = make([]float64, n)
	cols["random"] = make([]float64, n)
	for i, x := range near {
		cols["near"][i] = x.Vec[0]
		cols["random"][i] = rng.NormFloat64()
	}
	c, keys := make(column, n), make([]uint64, n)
	for _, name := range []string{"random", "sorted", "reversed", "organ_pipe", "sawtooth", "median3_killer", "equal", "near"} {
		xs := slices.Clone(pat)
		for i := range xs {
			xs[i].Vec = cols[name][i : i+1]
		}
		b.Run(name+"/ref", func(b *testing.B) {
			ref := newRefColumn(n)
			for b.Loop() {
				ref.load(xs, 0)
			}
		})
		b.Run(name+"/new", func(b *testing.B) {
			for b.Loop() {
				c.load(xs, cols[name], keys)
			}
		})
	}
}
