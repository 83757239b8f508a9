package compress

import (
	"errors"
	"testing"
)

// naiveFirstBudgets is the reference schedule, stated on totals: the first message may
// spend floor((k−1)·B) bytes more than B; message n (n ≥ 1) gets what keeps the total of
// the budgets so far at (n+1)·B, but at least need[n] and at most B.
func naiveFirstBudgets(b int, k float64, need []int) []int {
	out := make([]int, len(need))
	total := 0
	for n := range need {
		if n == 0 {
			out[0] = b + int(float64(k-1)*float64(b))
		} else {
			out[n] = min(b, max(need[n], (n+1)*b-total))
		}
		total += out[n]
	}
	return out
}

// The encoder's per-message budgets under FirstBudget are those of the naive reference,
// for random budgets, multiples and needs; with FirstBudget 1 every budget is B.
func TestFirstBudgetScheduleAgainstNaive(t *testing.T) {
	rng := newRand(31)
	for trial := 0; trial < 500; trial++ {
		b := 1 + rng.IntN(5000)
		k := 1 + 15*rng.Float64()
		if trial%5 == 0 {
			k = 1
		}
		need := make([]int, 1+rng.IntN(40))
		for i := range need {
			need[i] = rng.IntN(b + 1)
		}
		e := &Encoder{cfg: Config{ByteBudget: b, FirstBudget: k}}
		want := naiveFirstBudgets(b, k, need)
		for n, nd := range need {
			got, debt := e.roundBudget(nd)
			if got != want[n] || (k == 1 && got != b) {
				t.Fatalf("trial %d (B %d, k %v): message %d budget %d, want %d", trial, b, k, n, got, want[n])
			}
			e.rounds, e.debt = e.rounds+1, debt
		}
	}
}

// Under FirstBudget, no message's payload exceeds its round's budget, and once the first
// message's extra bytes are repaid the messages together have spent no more than
// ByteBudget each.
func TestFirstBudgetNeverExceeded(t *testing.T) {
	rng := newRand(32)
	shapes := [][]int{{64, 48}, {96, 10}, {48}, {20, 80}, {10}}
	byName := map[string][]int{}
	for i, sh := range shapes {
		byName[string(rune('a'+i))] = sh
	}
	for trial := 0; trial < 6; trial++ {
		budget := 600 + rng.IntN(600)
		cfg := Config{RankMin: 1, RankMax: 16, MinLowRank: 256, ByteBudget: budget, FirstBudget: 2 + float64(trial), FeedbackDecay: 0.95, Seed: uint64(trial)}
		need, err := MinBudget(cfg, byName)
		if err != nil {
			t.Fatal(err)
		}
		e := mustEncoder(t, cfg)
		spent, repaid := 0, false
		for round := 0; round < 40; round++ {
			var ts []Tensor
			for i, sh := range shapes {
				ts = append(ts, randTensor(rng, string(rune('a'+i)), 1+4*rng.Float64(), sh...))
			}
			allowed, _ := e.roundBudget(need)
			n := mustEncode(t, e, ts).PayloadBytes()
			if n > allowed || round > 0 && n > budget {
				t.Fatalf("trial %d round %d: payload %d bytes, budget %d (B %d)", trial, round, n, allowed, budget)
			}
			spent += n
			repaid = repaid || round > 0 && e.debt == 0
			if repaid && spent > (round+1)*budget {
				t.Fatalf("trial %d: %d bytes over %d rounds after repaying, over %d each", trial, spent, round+1, budget)
			}
		}
		if !repaid {
			t.Fatalf("trial %d: the debt %d was not repaid in 40 rounds", trial, e.debt)
		}
	}
}

// A restart restores the debt: a restored encoder goes on with the schedule instead of
// taking the first message's extra budget again; a debt out of bounds is refused.
func TestFirstBudgetDebtSurvivesState(t *testing.T) {
	rng := newRand(33)
	cfg := Config{RankMin: 1, RankMax: 16, MinLowRank: 256, ByteBudget: 800, FirstBudget: 4, Seed: 1}
	e := mustEncoder(t, cfg)
	mustEncode(t, e, []Tensor{randTensor(rng, "w", 1, 64, 48), randTensor(rng, "b", 1, 48)})
	r := mustEncoder(t, cfg)
	if err := r.SetState(e.State()); err != nil {
		t.Fatal(err)
	}
	if r.rounds != 1 || r.debt != e.debt || r.debt != 2400 {
		t.Fatalf("restored rounds %d, debt %d; want 1 and %d (2400)", r.rounds, r.debt, e.debt)
	}
	for _, debt := range []int{-1, 16*800 + 1} {
		st := e.State()
		st.Debt = debt
		if err := r.SetState(st); !errors.Is(err, ErrState) {
			t.Fatalf("debt %d: %v", debt, err)
		}
	}
}

func TestFirstBudgetOutOfRangeRefused(t *testing.T) {
	for _, k := range []float64{0.5, 17, -1} {
		c := Config{ByteBudget: 100, FirstBudget: k}
		if err := c.Validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("first budget %v: %v", k, err)
		}
	}
}
