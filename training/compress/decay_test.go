package compress

import (
	"math"
	"testing"
)

// naiveFeedback is the reference error feedback with a decay: e ← β·e + Δ, send C(e),
// e ← e − decode(C(e)). It keeps one residual per tensor name.
type naiveFeedback struct {
	decay float64
	res   map[string][]float64
}

// step returns what the reference would compress this round, and after the receiver's
// reconstruction sent is known, what it keeps.
func (n *naiveFeedback) input(t Tensor) []float64 {
	prev := n.res[t.Name]
	x := make([]float64, len(t.Data))
	for i, v := range t.Data {
		e := 0.0
		if prev != nil {
			e = prev[i]
		}
		x[i] = float64(n.decay*e) + v
	}
	return x
}

func (n *naiveFeedback) keep(name string, x, sent []float64) {
	r := make([]float64, len(x))
	for i := range x {
		r[i] = x[i] - sent[i]
	}
	n.res[name] = r
}

// With a decay, the encoder's residual equals the naive reference's bit for bit, over many
// rounds, random decays in (0, 1] and low-rank, dense and tiny tensors, in both
// quantised and raw modes; and a decay below 1 changes what is sent.
func TestFeedbackDecayMatchesReference(t *testing.T) {
	rng := newRand(11)
	for trial := 0; trial < 12; trial++ {
		decay := 1 - rng.Float64()
		if trial == 0 {
			decay = 1
		}
		cfg := Config{RankMax: 1 + rng.IntN(4), MinLowRank: 64, FeedbackDecay: decay, NoQuant: trial%3 == 2, Seed: uint64(trial)}
		e := mustEncoder(t, cfg)
		ref := &naiveFeedback{decay: decay, res: map[string][]float64{}}
		for round := 0; round < 6; round++ {
			ts := []Tensor{randTensor(rng, "w", 1, 24, 20), randTensor(rng, "b", 0.1, 20), randTensor(rng, "s", 3, 3, 2)}
			inputs := make([][]float64, len(ts))
			for i, tt := range ts {
				inputs[i] = ref.input(tt)
			}
			got := mustDecode(t, mustEncode(t, e, ts))
			for i, tt := range ts {
				ref.keep(tt.Name, inputs[i], got[i].Data)
				want, res := ref.res[tt.Name], e.state[tt.Name].residual
				for j := range want {
					if math.Float64bits(res[j]) != math.Float64bits(want[j]) {
						t.Fatalf("trial %d (decay %v) round %d %s[%d]: residual %v, reference %v", trial, decay, round, tt.Name, j, res[j], want[j])
					}
				}
			}
		}
	}
}

// A decay below 1 sends something else than no decay from the second round on, and the
// residual it keeps is smaller.
func TestFeedbackDecayForgets(t *testing.T) {
	rng := newRand(12)
	rounds := make([][]Tensor, 4)
	for i := range rounds {
		rounds[i] = []Tensor{randTensor(rng, "w", 1, 32, 24)}
	}
	residual := func(decay float64) float64 {
		e := mustEncoder(t, Config{RankMax: 1, MinLowRank: 64, FeedbackDecay: decay})
		for _, ts := range rounds {
			mustEncode(t, e, clone(ts))
		}
		return norm(e.state["w"].residual)
	}
	full, half := residual(1), residual(0.5)
	if !(half < 0.9*full) {
		t.Fatalf("residual norm with decay 0.5: %v, without: %v", half, full)
	}
}

// Stats reports each tensor's residual norm after the last round: exactly ‖residual‖.
func TestStatsResidualNorm(t *testing.T) {
	rng := newRand(13)
	e := mustEncoder(t, Config{RankMax: 2, MinLowRank: 64, FeedbackDecay: 0.9})
	for round := 0; round < 3; round++ {
		mustEncode(t, e, []Tensor{randTensor(rng, "w", 1, 24, 20), randTensor(rng, "b", 1, 20)})
		for _, s := range e.Stats() {
			want := math.Sqrt(sumSquares(e.state[s.Name].residual))
			if s.Residual != want || !(want > 0) {
				t.Fatalf("round %d %s: residual norm %v, want %v", round, s.Name, s.Residual, want)
			}
		}
	}
}
