package compress

import (
	"errors"
	"math"
	"slices"
	"testing"
)

// exhaustive is the naive reference: the best total gain over every rank combination
// within the budget.
func exhaustive(cs []rankChoice, budget int) float64 {
	best := math.Inf(-1)
	ranks := make([]int, len(cs))
	var walk func(i, spent int, gain float64)
	walk = func(i, spent int, gain float64) {
		if spent > budget {
			return
		}
		if i == len(cs) {
			best = max(best, gain)
			return
		}
		g := gain
		for k := 0; k < cs[i].lo; k++ {
			g += cs[i].gain[k]
		}
		for r := cs[i].lo; r <= cs[i].hi; r++ {
			ranks[i] = r
			walk(i+1, spent+r*cs[i].step, g)
			if r < cs[i].hi {
				g += cs[i].gain[r]
			}
		}
	}
	walk(0, 0, 0)
	return best
}

func totalGain(cs []rankChoice, ranks []int) (gain float64, bytes int) {
	for i, c := range cs {
		for k := 0; k < ranks[i]; k++ {
			gain += c.gain[k]
		}
		bytes += ranks[i] * c.step
	}
	return gain, bytes
}

func randomChoices(seed uint64, sameStep bool) []rankChoice {
	rng := newRand(seed)
	cs := make([]rankChoice, 1+rng.IntN(4))
	step := 1 + rng.IntN(50)
	for i := range cs {
		hi := 1 + rng.IntN(5)
		c := rankChoice{lo: 1 + rng.IntN(hi), hi: hi, step: step, gain: make([]float64, hi)}
		if !sameStep {
			c.step = 1 + rng.IntN(50)
		}
		g := 10 * rng.Float64()
		for k := range c.gain {
			c.gain[k] = g
			g *= rng.Float64()
		}
		cs[i] = c
	}
	return cs
}

// The allocation never spends more than the budget, refuses a budget the lowest ranks do
// not fit, and is as good as the exhaustive optimum when every rank costs the same (the
// gains being non-increasing) and within one component's gain of it otherwise.
func TestAllocateRanksAgainstExhaustive(t *testing.T) {
	for seed := uint64(0); seed < 400; seed++ {
		cs := randomChoices(seed, seed%2 == 0)
		minBytes, maxBytes, maxGain := 0, 0, 0.0
		for _, c := range cs {
			minBytes += c.lo * c.step
			maxBytes += c.hi * c.step
			maxGain = max(maxGain, c.gain[0])
		}
		budget := minBytes + int(newRand(seed+1000).Float64()*float64(maxBytes-minBytes+20))
		ranks, err := allocateRanks(cs, budget)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		gain, bytes := totalGain(cs, ranks)
		if bytes > budget {
			t.Fatalf("seed %d: %d bytes over the budget %d", seed, bytes, budget)
		}
		for i, c := range cs {
			if ranks[i] < c.lo || ranks[i] > c.hi {
				t.Fatalf("seed %d: rank %d outside [%d, %d]", seed, ranks[i], c.lo, c.hi)
			}
		}
		opt := exhaustive(cs, budget)
		if seed%2 == 0 && gain < opt*(1-1e-12) {
			t.Fatalf("seed %d (equal steps): gain %v, exhaustive optimum %v", seed, gain, opt)
		}
		if gain < opt-maxGain*(1+1e-12) {
			t.Fatalf("seed %d: gain %v, more than one component (%v) below the optimum %v", seed, gain, maxGain, opt)
		}
		if minBytes > 0 {
			if _, err := allocateRanks(cs, minBytes-1); !errors.Is(err, ErrBudget) {
				t.Fatalf("seed %d: budget under the lowest ranks: %v", seed, err)
			}
		}
	}
}

// Over rounds of changing inputs, every message's payload stays within the byte budget, and a budget too small for the lowest ranks fails without changing the
// encoder.
func TestByteBudgetNeverExceeded(t *testing.T) {
	rng := newRand(21)
	for trial := 0; trial < 8; trial++ {
		shapes := [][]int{{64, 48}, {96, 10}, {48}, {20, 80}, {10}}
		budget := 420 + rng.IntN(600)
		e := mustEncoder(t, Config{RankMin: 2, RankMax: 8, MinLowRank: 256, ByteBudget: budget, FeedbackDecay: 0.9, Seed: uint64(trial)})
		for round := 0; round < 5; round++ {
			var ts []Tensor
			for i, sh := range shapes {
				ts = append(ts, randTensor(rng, string(rune('a'+i)), 1+4*rng.Float64(), sh...))
			}
			msg := mustEncode(t, e, ts)
			if n := msg.PayloadBytes(); n > budget {
				t.Fatalf("trial %d round %d: payload %d bytes over the budget %d", trial, round, n, budget)
			}
		}
	}
	e := mustEncoder(t, Config{RankMin: 4, RankMax: 8, MinLowRank: 256, ByteBudget: 100})
	before := e.Stats()
	if _, err := e.Encode([]Tensor{randTensor(rng, "w", 1, 64, 48)}); !errors.Is(err, ErrBudget) {
		t.Fatalf("budget of 100 bytes for rank 4 of 64x48: %v", err)
	}
	if !slices.Equal(before, e.Stats()) {
		t.Fatal("a refused Encode changed the encoder")
	}
}

// MinBudget is the least budget that encodes: at it every shape set encodes, one byte
// under it none does.
func TestMinBudgetIsTheLeastThatEncodes(t *testing.T) {
	rng := newRand(22)
	for trial := 0; trial < 20; trial++ {
		cfg := Config{RankMin: 1 + rng.IntN(3), RankMax: 4, MinLowRank: 64, FactorBits: []int{2, 4, 1}[trial%3], DenseBits: []int{4, 8}[trial/3%2], BlockSize: 8 * (1 + rng.IntN(4))}
		var ts []Tensor
		shapes := map[string][]int{}
		for i := 0; i < 1+rng.IntN(4); i++ {
			sh := []int{1 + rng.IntN(40), 1 + rng.IntN(40)}
			if i%3 == 2 {
				sh = sh[:1]
			}
			name := string(rune('a' + i))
			ts, shapes[name] = append(ts, randTensor(rng, name, 1, sh...)), sh
		}
		least, err := MinBudget(cfg, shapes)
		if err != nil {
			t.Fatal(err)
		}
		cfg.ByteBudget = least
		if m, err := mustEncoder(t, cfg).Encode(ts); err != nil || m.PayloadBytes() > least {
			t.Fatalf("trial %d: budget %d: %v", trial, least, err)
		}
		if least > 1 {
			cfg.ByteBudget = least - 1
			if _, err := mustEncoder(t, cfg).Encode(ts); !errors.Is(err, ErrBudget) {
				t.Fatalf("trial %d: budget %d, one under the least: %v", trial, least-1, err)
			}
		}
	}
}
