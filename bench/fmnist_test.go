package bench

import (
	"os"
	"testing"
)

// TestLoadFMNIST reads the real Fashion-MNIST files that Debian's dataset-fashion-mnist
// package installs (scripts/deps.sh installs it; CI must have it, elsewhere it is skipped).
func TestLoadFMNIST(t *testing.T) {
	if _, err := os.Stat(DefaultFMNISTDir); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI must have Fashion-MNIST (scripts/deps.sh installs it): %v", err)
		}
		t.Skipf("Fashion-MNIST not installed: %v", err)
	}
	o := DefaultTrainOptions("fmnist")
	o.EvalSamples = 1000
	tk, err := loadFMNIST(o)
	if err != nil {
		t.Fatal(err)
	}
	if n := tk.train.Len(); n != 60000 {
		t.Errorf("%d training images, want 60000", n)
	}
	if tk.test.N != 1000 || len(tk.test.X) != 1000*28*28 {
		t.Fatalf("test batch: %d samples, %d pixels", tk.test.N, len(tk.test.X))
	}
	counts := make([]int, 10)
	for _, y := range tk.test.Y {
		if y < 0 || y >= 10 {
			t.Fatalf("label %d", y)
		}
		counts[y]++
	}
	for c, n := range counts {
		if n == 0 {
			t.Errorf("no sample of class %d among 1000 test images", c)
		}
	}
	lo, hi := tk.test.X[0], tk.test.X[0]
	for _, v := range tk.test.X {
		lo, hi = min(lo, v), max(hi, v)
	}
	if lo < 0 || hi > 1 || hi == lo {
		t.Errorf("pixels span [%v, %v], want a spread within [0, 1]", lo, hi)
	}
}
