package compress

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"testing"
)

// dueShapes is a model of low-rank matrices and dense tensors, interleaved.
var dueShapes = [][]int{{24, 20}, {20}, {20, 12}, {12}, {3, 2}, {12, 10}, {10}}

func dueInputs(rng interface{ NormFloat64() float64 }, round int) []Tensor {
	names := []string{"w1", "b1", "w2", "b2", "s", "w3", "b3"}
	ts := make([]Tensor, len(dueShapes))
	for i, s := range dueShapes {
		t := Tensor{Name: names[i], Shape: slices.Clone(s), Data: make([]float64, numel(s))}
		for j := range t.Data {
			t.Data[j] = (1 + 0.1*float64(round)) * rng.NormFloat64()
		}
		ts[i] = t
	}
	return ts
}

// Due: every low-rank tensor in every round; the j-th dense tensor exactly in the rounds
// r with (r+j) mod k = 0, so once in any k consecutive rounds; nil (all) for k <= 1 and for
// a model without a low-rank tensor.
func TestDueRotation(t *testing.T) {
	for k := 0; k <= 5; k++ {
		cfg := Config{MinLowRank: 64, DenseEvery: k}
		for r := uint64(0); r < 12; r++ {
			due := cfg.Due(r, dueShapes)
			if k <= 1 {
				if due != nil {
					t.Fatalf("k %d: due %v, want nil", k, due)
				}
				continue
			}
			j := uint64(0)
			for i, s := range dueShapes {
				low := len(s) == 2 && s[0]*s[1] >= 64
				want := low || (r+j)%uint64(k) == 0
				if !low {
					j++
				}
				if due[i] != want {
					t.Fatalf("k %d, round %d, tensor %d %v: due %v, want %v", k, r, i, s, due[i], want)
				}
			}
		}
	}
	if due := (Config{MinLowRank: 64, DenseEvery: 3}).Due(1, [][]int{{20}, {3, 2}}); due != nil {
		t.Fatalf("a model without low-rank tensors: due %v, want nil (all)", due)
	}
}

// refHeld is the reference of DenseEvery's error feedback for one tensor: x = β·e + Δ in
// the round after a send, x = e + Δ after a round left out; a sent tensor keeps x minus
// what the receiver decodes, a tensor left out keeps x.
type refHeld struct {
	e       []float64
	pending bool
}

func (h *refHeld) input(beta float64, d []float64) []float64 {
	x := make([]float64, len(d))
	for i, v := range d {
		e := 0.0
		if h.e != nil {
			e = h.e[i]
		}
		if h.pending {
			x[i] = e + v
		} else {
			x[i] = float64(beta*e) + v
		}
	}
	return x
}

// With DenseEvery, each message carries exactly the due tensors, and the encoder's residuals
// equal the reference's bit for bit over many rounds, for several k and decays; with no
// decay, what was sent plus what is left is what came in.
func TestDenseEveryMatchesReference(t *testing.T) {
	rng := newRand(21)
	for trial := 0; trial < 8; trial++ {
		k := 2 + trial%4
		beta := 1.0
		if trial%2 == 1 {
			beta = 0.8 + 0.2*rng.Float64()
		}
		cfg := Config{MinLowRank: 64, RankMax: 3, DenseEvery: k, FeedbackDecay: beta, DenseBits: 4 + 4*(trial%2), Seed: uint64(trial)}
		e := mustEncoder(t, cfg)
		refs := make([]refHeld, len(dueShapes))
		sent := make([][]float64, len(dueShapes))
		in := make([][]float64, len(dueShapes))
		for r := 0; r < 3*k+1; r++ {
			ts := dueInputs(rng, r)
			due := cfg.Due(uint64(r), dueShapes)
			m, err := e.EncodeRound(uint64(r), ts)
			if err != nil {
				t.Fatal(err)
			}
			got := mustDecode(t, m)
			byName := map[string][]float64{}
			for _, g := range got {
				byName[g.Name] = g.Data
			}
			st := e.State()
			for i, tt := range ts {
				x := refs[i].input(beta, tt.Data)
				dec, carried := byName[tt.Name]
				if carried != due[i] {
					t.Fatalf("trial %d round %d: %q carried %v, due %v", trial, r, tt.Name, carried, due[i])
				}
				if carried {
					for j := range x {
						x[j] -= dec[j]
					}
				}
				refs[i].e, refs[i].pending = x, !carried && !(len(tt.Shape) == 2 && numel(tt.Shape) >= 64)
				if !slices.Equal(floatBitsOf(st.Tensors[i].Residual), floatBitsOf(x)) {
					t.Fatalf("trial %d round %d: %q residual differs from the reference", trial, r, tt.Name)
				}
				if sent[i] == nil {
					sent[i], in[i] = make([]float64, len(x)), make([]float64, len(x))
				}
				for j, v := range tt.Data {
					in[i][j] += v
					if carried {
						sent[i][j] += dec[j]
					}
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

func floatBitsOf(v []float64) []uint64 {
	out := make([]uint64, len(v))
	for i, x := range v {
		out[i] = math.Float64bits(x)
	}
	return out
}

// Under a byte budget, DenseEvery never takes a message over the budget, and the bytes the
// dense tensors leave go to the matrices: their ranks sum higher than with every tensor in
// every message.
func TestDenseEveryBudgetGoesToMatrices(t *testing.T) {
	ranks := func(k int) (sum int) {
		cfg := Config{MinLowRank: 64, RankMax: 12, DenseEvery: k, ByteBudget: 160, FactorBits: 2, DenseBits: 8}
		e := mustEncoder(t, cfg)
		rng := newRand(5)
		for r := 0; r < 12; r++ {
			m, err := e.EncodeRound(uint64(r), dueInputs(rng, r))
			if err != nil {
				t.Fatal(err)
			}
			if b := m.PayloadBytes(); b > cfg.ByteBudget {
				t.Fatalf("k %d round %d: %d bytes over the budget %d", k, r, b, cfg.ByteBudget)
			}
			for _, s := range e.Stats() {
				sum += s.Rank
			}
		}
		return sum
	}
	one, four := ranks(1), ranks(4)
	if four <= one {
		t.Fatalf("ranks summed over the run: %d with dense every 4, %d without", four, one)
	}
}

// DecodeDue zeroes the tensors that are not due and refuses a message that leaves out a due
// tensor or carries one that is not due; Encode is EncodeRound(0); Validate bounds it.
func TestDecodeDueRefusesTheWrongTensors(t *testing.T) {
	cfg := Config{MinLowRank: 64, RankMax: 3, DenseEvery: 3}
	e := mustEncoder(t, cfg)
	rng := newRand(9)
	m, err := e.EncodeRound(1, dueInputs(rng, 1))
	if err != nil {
		t.Fatal(err)
	}
	dst := func() []Tensor { return dueInputs(rng, 0) } // non-zero values, to see them cleared
	good := dst()
	if err := m.DecodeDue(good, cfg.Due(1, dueShapes)); err != nil {
		t.Fatalf("the round's own schedule: %v", err)
	}
	for i, d := range cfg.Due(1, dueShapes) {
		if !d && norm(good[i].Data) != 0 {
			t.Fatalf("tensor %q not due but not zero", good[i].Name)
		}
	}
	// Round 1 carries s alone of the dense tensors; round 0 wants b1 and b3, round 2 b2.
	for _, r := range []uint64{0, 2} {
		if err := m.DecodeDue(dst(), cfg.Due(r, dueShapes)); !errors.Is(err, ErrMalformed) {
			t.Fatalf("round 1's message decoded for round %d: %v, want ErrMalformed", r, err)
		}
	}
	all := mustEncode(t, mustEncoder(t, Config{MinLowRank: 64, RankMax: 3}), dueInputs(rng, 1))
	if err := all.DecodeDue(dst(), cfg.Due(1, dueShapes)); !errors.Is(err, ErrMalformed) {
		t.Fatalf("a message with every tensor decoded for round 1: %v, want ErrMalformed", err)
	}
	if err := m.DecodeInto(dst()); !errors.Is(err, ErrMalformed) {
		t.Fatalf("a message without every tensor decoded with all of them due: %v", err)
	}
	in := dueInputs(rng, 2)
	a, b := mustEncoder(t, cfg), mustEncoder(t, cfg)
	ma, err := a.EncodeRound(0, in)
	if err != nil {
		t.Fatal(err)
	}
	if mb := mustEncode(t, b, in); !bytes.Equal(mustBytes(t, ma), mustBytes(t, mb)) {
		t.Fatal("Encode is not EncodeRound for round 0")
	}
	for _, k := range []int{-1, MaxDenseEvery + 1} {
		c := Config{DenseEvery: k}
		if err := c.Validate(); !errors.Is(err, ErrConfig) {
			t.Fatalf("DenseEvery %d: %v", k, err)
		}
	}
}

// An Encoder restored from another's state between held rounds encodes the same bytes, and
// a pending flag on a low-rank tensor is refused.
func TestDenseEveryStateRestored(t *testing.T) {
	cfg := Config{MinLowRank: 64, RankMax: 3, DenseEvery: 3, FeedbackDecay: 0.9}
	rng := newRand(4)
	in := make([][]Tensor, 7)
	for r := range in {
		in[r] = dueInputs(rng, r)
	}
	a := mustEncoder(t, cfg)
	for r := 0; r < 4; r++ {
		if _, err := a.EncodeRound(uint64(r), in[r]); err != nil {
			t.Fatal(err)
		}
	}
	st := a.State()
	b := mustEncoder(t, cfg)
	if err := b.SetState(st); err != nil {
		t.Fatal(err)
	}
	for r := 4; r < 7; r++ {
		ma, _ := a.EncodeRound(uint64(r), in[r])
		mb, _ := b.EncodeRound(uint64(r), in[r])
		if !bytes.Equal(mustBytes(t, ma), mustBytes(t, mb)) {
			t.Fatalf("round %d after the restore: the bytes differ", r)
		}
	}
	bad := a.State()
	bad.Tensors[0].Pending = true
	if err := mustEncoder(t, cfg).SetState(bad); !errors.Is(err, ErrState) {
		t.Fatalf("a pending low-rank tensor: %v, want ErrState", err)
	}
}
