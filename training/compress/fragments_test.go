package compress

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"testing"
)

// dueReference is Config.Due written out the long way: the positions of the low-rank
// tensors, then each tensor's schedule from its position among its kind.
func dueReference(c Config, r uint64, shapes [][]int) []bool {
	minLR := c.MinLowRank
	if minLR == 0 {
		minLR = DefaultMinLowRank
	}
	var low, dense []int
	for i, s := range shapes {
		if len(s) == 2 && s[0]*s[1] >= minLR && s[0] >= 2 && s[1] >= 2 {
			low = append(low, i)
		} else {
			dense = append(dense, i)
		}
	}
	due := make([]bool, len(shapes))
	for i := range due {
		due[i] = true
	}
	if len(low) == 0 {
		return due
	}
	if m := min(max(c.Fragments, 1), len(low)); m > 1 {
		for pos, i := range low {
			due[i] = int(r%uint64(m)) == pos%m
		}
	}
	if c.DenseEvery > 1 {
		for pos, i := range dense {
			due[i] = (int(r%uint64(c.DenseEvery))+pos)%c.DenseEvery == 0
		}
	}
	return due
}

// Due with Fragments agrees with the reference on random models, rounds and settings
// (nil meaning all due); every round carries at least one low-rank tensor, and each
// low-rank tensor is due exactly once in any m = min(k, n) consecutive rounds.
func TestDueFragmentsMatchesReference(t *testing.T) {
	rng := newRand(31)
	for trial := 0; trial < 300; trial++ {
		shapes := make([][]int, 1+rng.IntN(9))
		for i := range shapes {
			switch rng.IntN(3) {
			case 0:
				shapes[i] = []int{1 + rng.IntN(20)}
			case 1:
				shapes[i] = []int{1 + rng.IntN(20), 1 + rng.IntN(20)}
			default:
				shapes[i] = []int{4 + rng.IntN(30), 4 + rng.IntN(30)}
			}
		}
		c := Config{MinLowRank: 16 + rng.IntN(64), Fragments: rng.IntN(6), DenseEvery: rng.IntN(5)}
		n := 0
		for _, s := range shapes {
			if lowRankShape(s, c.MinLowRank) {
				n++
			}
		}
		m := min(max(c.Fragments, 1), max(n, 1))
		seen := make([]int, len(shapes))
		for r := uint64(0); r < 40; r++ {
			got, want := c.Due(r, shapes), dueReference(c, r, shapes)
			all := got == nil
			if all {
				got = make([]bool, len(shapes))
				for i := range got {
					got[i] = true
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("trial %d %+v round %d %v: due %v, want %v", trial, c, r, shapes, got, want)
			}
			if all != (n == 0 || m <= 1 && c.DenseEvery <= 1) {
				t.Fatalf("trial %d %+v: nil %v with %d low-rank tensors", trial, c, all, n)
			}
			lowDue := 0
			for i, s := range shapes {
				if lowRankShape(s, c.MinLowRank) && got[i] {
					lowDue++
					seen[i]++
				}
			}
			if n > 0 && lowDue == 0 {
				t.Fatalf("trial %d %+v round %d: no low-rank tensor due", trial, c, r)
			}
			if (r+1)%uint64(m) == 0 {
				for i, s := range shapes {
					if lowRankShape(s, c.MinLowRank) && seen[i] != int(r+1)/m {
						t.Fatalf("trial %d %+v: tensor %d due %d times in %d rounds (m %d)", trial, c, i, seen[i], r+1, m)
					}
				}
			}
		}
	}
}

// fragShapes is a model of four low-rank matrices and their biases.
var fragShapes = [][]int{{24, 20}, {20}, {20, 16}, {16}, {16, 12}, {12}, {12, 6}, {6}}

func fragInputs(rng interface{ NormFloat64() float64 }, round int) []Tensor {
	ts := make([]Tensor, len(fragShapes))
	for i, s := range fragShapes {
		t := Tensor{Name: string(rune('a' + i)), Shape: slices.Clone(s), Data: make([]float64, numel(s))}
		for j := range t.Data {
			t.Data[j] = (1 + 0.1*float64(round)) * rng.NormFloat64()
		}
		ts[i] = t
	}
	return ts
}

// With Fragments, each message carries exactly the due tensors, and the encoder's
// residuals equal the reference's (refHeld: the decay only in the round after a send) bit
// for bit, matrices and biases alike, with and without a byte budget and DenseEvery; with
// no decay, what was sent plus what is left is what came in. A held matrix keeps its rank
// and warm start: its Stats show it held at rank 0.
func TestFragmentsMatchReference(t *testing.T) {
	rng := newRand(22)
	for trial := 0; trial < 12; trial++ {
		k := 2 + trial%3
		beta := 1.0
		if trial%2 == 1 {
			beta = 0.8 + 0.2*rng.Float64()
		}
		cfg := Config{MinLowRank: 64, RankMax: 6, Fragments: k, DenseEvery: trial % 4, FeedbackDecay: beta, FactorBits: 2 + 2*(trial%2), Seed: uint64(trial)}
		if trial%3 == 0 {
			cfg.ByteBudget = 120 + rng.IntN(200)
		}
		e := mustEncoder(t, cfg)
		refs := make([]refHeld, len(fragShapes))
		sent := make([][]float64, len(fragShapes))
		in := make([][]float64, len(fragShapes))
		for r := 0; r < 3*k+2; r++ {
			ts := fragInputs(rng, r)
			due := cfg.Due(uint64(r), fragShapes)
			if due == nil {
				t.Fatalf("trial %d: no schedule", trial)
			}
			m, err := e.EncodeRound(uint64(r), ts)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.ByteBudget > 0 && m.PayloadBytes() > cfg.ByteBudget {
				t.Fatalf("trial %d round %d: %d bytes over the budget %d", trial, r, m.PayloadBytes(), cfg.ByteBudget)
			}
			got := make([]Tensor, len(ts))
			for i, x := range ts {
				got[i] = Tensor{Name: x.Name, Shape: slices.Clone(x.Shape), Data: make([]float64, len(x.Data))}
			}
			if err := m.DecodeDue(got, due); err != nil {
				t.Fatal(err)
			}
			carried := map[string]bool{}
			for _, p := range m.pieces {
				carried[p.Name] = true
			}
			// The state and the stats are in first-seen order: by name here.
			res, stats := map[string][]float64{}, map[string]TensorStats{}
			for _, x := range e.State().Tensors {
				res[x.Name] = x.Residual
			}
			for _, x := range e.Stats() {
				stats[x.Name] = x
			}
			for i, tt := range ts {
				if carried[tt.Name] != due[i] {
					t.Fatalf("trial %d round %d: %q carried %v, due %v", trial, r, tt.Name, carried[tt.Name], due[i])
				}
				if s := stats[tt.Name]; s.Held == due[i] || s.LowRank && (s.Rank == 0) == due[i] {
					t.Fatalf("trial %d round %d: %q due %v, stats %+v", trial, r, tt.Name, due[i], s)
				}
				x := refs[i].input(beta, tt.Data)
				if due[i] {
					for j := range x {
						x[j] -= got[i].Data[j]
					}
				}
				refs[i].e, refs[i].pending = x, !due[i]
				if !slices.Equal(floatBitsOf(res[tt.Name]), floatBitsOf(x)) {
					t.Fatalf("trial %d round %d: %q residual differs from the reference", trial, r, tt.Name)
				}
				if sent[i] == nil {
					sent[i], in[i] = make([]float64, len(x)), make([]float64, len(x))
				}
				for j, v := range tt.Data {
					in[i][j] += v
					sent[i][j] += got[i].Data[j] // zero where not due
				}
			}
		}
		if beta != 1 {
			continue
		}
		for i := range refs {
			for j := range in[i] {
				if d := math.Abs(sent[i][j] + refs[i].e[j] - in[i][j]); d > 1e-9*(1+math.Abs(in[i][j])) {
					t.Fatalf("trial %d tensor %d: sent plus residual is off the inputs by %g", trial, i, d)
				}
			}
		}
	}
}

// Under a byte budget, no message with Fragments exceeds it, for many budgets and inputs,
// and the budget goes to the matrices that are due: after every round, each due matrix of
// more than RankMax rows and columns (whose estimated spectrum cannot run out before its
// highest rank) below that rank would have taken the message over the budget with one
// more rank.
func TestFragmentsBudgetNeverExceeded(t *testing.T) {
	rng := newRand(6)
	shapes := map[string][]int{}
	for i, s := range fragShapes {
		shapes[string(rune('a'+i))] = s
	}
	checked := 0
	for trial := 0; trial < 40; trial++ {
		budget := 150 + rng.IntN(700)
		cfg := Config{MinLowRank: 64, RankMax: 12, Fragments: 1 + rng.IntN(6), DenseEvery: rng.IntN(3), ByteBudget: budget,
			FactorBits: 1 + trial%2, DenseBits: 4 + 4*rng.IntN(2), Seed: rng.Uint64()}
		least, err := MinBudget(cfg, shapes)
		if err != nil || least > budget {
			t.Fatalf("budget %d, least %d: %v", budget, least, err)
		}
		e := mustEncoder(t, cfg)
		in := newRand(cfg.Seed)
		for r := 0; r < 16; r++ {
			m, err := e.EncodeRound(uint64(r), fragInputs(in, r))
			if err != nil {
				t.Fatal(err)
			}
			b := m.PayloadBytes()
			if b > budget {
				t.Fatalf("%+v round %d: %d bytes over the budget %d", cfg, r, b, budget)
			}
			for _, st := range e.Stats() {
				s := shapes[st.Name]
				if !st.LowRank || st.Held || min(s[0], s[1]) <= cfg.RankMax || st.Rank >= cfg.RankMax {
					continue
				}
				checked++
				pc, ps := colsBytes(s[0], 1, cfg.FactorBits, DefaultBlockSize)
				qc, qs := colsBytes(s[1], 1, cfg.FactorBits, DefaultBlockSize)
				if b+pc+ps+qc+qs <= budget {
					t.Fatalf("%+v round %d: %q at rank %d, %d bytes left, one more rank costs %d", cfg, r, st.Name, st.Rank, budget-b, pc+ps+qc+qs)
				}
			}
		}
	}
	if checked < 100 {
		t.Fatalf("only %d due matrices below their highest rank", checked)
	}
}

// An Encoder restored between rounds in which matrices are held encodes the same bytes
// as the one it was taken from; a held matrix is refused without Fragments. Validate
// bounds Fragments and refuses it with top-k and with shared bases; the schedule refuses a
// message that carries a matrix that is not due.
func TestFragmentsStateAndValidate(t *testing.T) {
	cfg := Config{MinLowRank: 64, RankMax: 4, Fragments: 3, FeedbackDecay: 0.9, FactorBits: 2, ByteBudget: 300}
	rng := newRand(8)
	in := make([][]Tensor, 8)
	for r := range in {
		in[r] = fragInputs(rng, r)
	}
	a := mustEncoder(t, cfg)
	for r := 0; r < 4; r++ {
		if _, err := a.EncodeRound(uint64(r), in[r]); err != nil {
			t.Fatal(err)
		}
	}
	st := a.State()
	held := false
	for _, ts := range st.Tensors {
		held = held || ts.LowRank && ts.Held
	}
	if !held {
		t.Fatal("no matrix held in the state")
	}
	b := mustEncoder(t, cfg)
	if err := b.SetState(st); err != nil {
		t.Fatal(err)
	}
	for r := 4; r < 8; r++ {
		ma, err := a.EncodeRound(uint64(r), in[r])
		if err != nil {
			t.Fatal(err)
		}
		mb, _ := b.EncodeRound(uint64(r), in[r])
		if !bytes.Equal(mustBytes(t, ma), mustBytes(t, mb)) {
			t.Fatalf("round %d after the restore: the bytes differ", r)
		}
	}
	plain := cfg
	plain.Fragments = 0
	if err := mustEncoder(t, plain).SetState(st); !errors.Is(err, ErrState) {
		t.Fatalf("a held matrix without fragments: %v, want ErrState", err)
	}
	m, err := a.EncodeRound(8, fragInputs(rng, 8))
	if err != nil {
		t.Fatal(err)
	}
	like := fragInputs(rng, 0)
	if err := m.DecodeDue(like, cfg.Due(8, fragShapes)); err != nil {
		t.Fatal(err)
	}
	if err := m.DecodeDue(like, cfg.Due(9, fragShapes)); !errors.Is(err, ErrMalformed) {
		t.Fatalf("round 8's message decoded for round 9: %v, want ErrMalformed", err)
	}
	for _, c := range []Config{{Fragments: -1}, {Fragments: MaxFragments + 1}, {Fragments: 2, Codec: CodecTopK, ByteBudget: 100},
		{Fragments: 2, SharedRank: 4}} {
		if err := c.Validate(); !errors.Is(err, ErrConfig) {
			t.Fatalf("%+v: %v, want ErrConfig", c, err)
		}
	}
	for _, k := range []int{0, 1, MaxFragments} {
		c := Config{Fragments: k}
		if err := c.Validate(); err != nil {
			t.Fatalf("fragments %d: %v", k, err)
		}
	}
}
