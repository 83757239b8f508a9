package bench

import (
	"slices"
	"testing"
)

// The validation split is taken out of the training data: no worker ever trains on a
// validation sample, the workers' slices are disjoint, and together with the split they
// cover the training data.
func TestValidationSplitNeverTrainedOn(t *testing.T) {
	const n = 10000
	pool, val, err := validationSplit(n, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(val) < n/20 || len(val) > n/5 {
		t.Fatalf("validation split of %d samples out of %d", len(val), n)
	}
	seen := make([]int, n)
	for _, i := range val {
		seen[i]--
	}
	for seed := uint64(1); seed <= 2; seed++ {
		ws, err := workerSlices(pool, seed, 4)
		if err != nil {
			t.Fatal(err)
		}
		count := make([]int, n)
		for _, w := range ws {
			for _, i := range w {
				if seen[i] < 0 {
					t.Fatalf("seed %d: validation sample %d dealt to a worker", seed, i)
				}
				count[i]++
			}
		}
		for i, c := range count {
			if seen[i] == 0 && c != 1 {
				t.Fatalf("seed %d: training sample %d dealt %d times", seed, i, c)
			}
		}
	}
	again, val2, _ := validationSplit(n, 3)
	if !slices.Equal(again, pool) || !slices.Equal(val2, val) {
		t.Fatal("the split is not a function of (n, seed)")
	}
}
