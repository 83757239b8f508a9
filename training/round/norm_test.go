package round

import (
	"math"
	"slices"
	"testing"

	"github.com/lowband/lowband/training/compress"
)

// A contribution whose values' norm is over Config.MaxNorm is rejected at close and one
// within it is included, whether the norm is read value by value or the factors show it
// (compress.Message.SurelyWithinNorm): at bounds around each contribution's norm, the
// rejected are exactly those over it.
func TestCloseRejectsExactlyTheContributionsOverTheNormBound(t *testing.T) {
	theta := testTheta(5)
	peers := []string{"a", "b", "c", "d"}
	cs := contributions(t, theta, 0, peers)
	lay, err := newLayout(theta)
	if err != nil {
		t.Fatal(err)
	}
	like := make([]compress.Tensor, len(theta))
	for i, p := range theta {
		like[i] = compress.Tensor{Name: p.Name, Shape: p.Shape}
	}
	norms := make([]float64, len(cs))
	for i, c := range cs {
		rd, err := c.Msg.NewRangeReader(like)
		if err != nil {
			t.Fatal(err)
		}
		vals := make([]float64, lay.size)
		if err := rd.Read(0, lay.size, vals); err != nil {
			t.Fatal(err)
		}
		var ss float64
		for _, v := range vals {
			ss += float64(v * v)
		}
		norms[i] = math.Sqrt(ss)
	}
	weights := map[string]float64{"a": 1, "b": 1, "c": 1, "d": 1}
	for _, n := range norms {
		for _, bound := range []float64{n * 0.5, math.Nextafter(n, 0), n, n * (1 + 1e-9), n * 2} {
			cfg := testConfig("a", 0)
			cfg.MaxNorm = bound
			_, closed, err := Step(cfg, State{Params: theta}, cs, weights)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for i, c := range cs {
				if !(norms[i] <= bound) {
					want = append(want, c.Peer)
				}
			}
			if !slices.Equal(closed.Rejected, want) {
				t.Fatalf("bound %v (norms %v): rejected %v, want %v", bound, norms, closed.Rejected, want)
			}
		}
	}
}
