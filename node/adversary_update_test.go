package node

import (
	"math"
	"testing"

	"github.com/lowband/lowband/training"
	"github.com/lowband/lowband/training/round"
)

// TestAdversaryUpdates: each statistical kind hands its core base − Δ' for its
// pseudo-gradient Δ = base − local: sign-flip −Δ, scaled 100Δ, noise of Δ's norm,
// free-ride 0, stale its Δ of three rounds before, alie μ − σ and ipm −μ/2 of its last
// pseudo-gradients; the wire kinds hand back local as it is.
func TestAdversaryUpdates(t *testing.T) {
	base := []training.Tensor{{Name: "w", Shape: []int{2, 3}, Data: []float64{1, 2, 3, 4, 5, 6}}}
	deltas := [][]float64{{1, -1, 2, 0, 0.5, 3}, {3, 1, 0, 0, 0.5, -1}, {2, 0, 1, 1, 1, 1}, {0, 0, 0, 1, 1, 1}, {5, 5, 5, 5, 5, 5}}
	mu, sd := meanStd(deltas[1:])
	want := map[string]func(d []float64) []float64{
		AdvSignFlip:   func(d []float64) []float64 { return scaled(d, -1) },
		AdvScaled:     func(d []float64) []float64 { return scaled(d, 100) },
		AdvFreeRide:   func(d []float64) []float64 { return make([]float64, len(d)) },
		AdvStale:      func([]float64) []float64 { return deltas[1] },
		AdvIPM:        func([]float64) []float64 { return scaled(mu, -0.5) },
		AdvALIE:       func([]float64) []float64 { return sub(mu, sd) },
		AdvEquivocate: func(d []float64) []float64 { return d },
		AdvSilent:     func(d []float64) []float64 { return d },
	}
	for kind, w := range want {
		a := &adversary{kind: kind, self: "x"}
		var got []float64
		for r, d := range deltas {
			got = sentDelta(t, a, uint64(r), base, d)
		}
		if !near(got, w(deltas[len(deltas)-1])) {
			t.Errorf("%s: sent Δ' %v", kind, got)
		}
	}
	a := &adversary{kind: AdvNoise, self: testPeerID(t)}
	d := deltas[0]
	got := sentDelta(t, a, 0, base, d)
	if math.Abs(norm(got)-norm(d)) > 1e-9 || near(got, d) {
		t.Errorf("noise: sent %v (norm %v), want another vector of norm %v", got, norm(got), norm(d))
	}
	if again := sentDelta(t, a, 1, base, d); near(again, got) {
		t.Error("noise: the same noise in two rounds")
	}
}

// sentDelta runs a's update on a round whose work moved base by −d, and returns the Δ' it
// hands the core.
func sentDelta(t *testing.T, a *adversary, r uint64, base []training.Tensor, d []float64) []float64 {
	t.Helper()
	local := []training.Tensor{{Name: "w", Shape: []int{2, 3}, Data: sub(base[0].Data, d)}}
	out, err := a.update(round.Start{Round: r, Params: base}, local)
	if err != nil {
		t.Fatal(err)
	}
	return sub(base[0].Data, out[0].Data)
}

func sub(a, b []float64) []float64 {
	out := make([]float64, len(a))
	for i := range a {
		out[i] = a[i] - b[i]
	}
	return out
}

func near(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-9 {
			return false
		}
	}
	return true
}

func norm(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x * x
	}
	return math.Sqrt(s)
}
