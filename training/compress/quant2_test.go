package compress

import (
	"bytes"
	"errors"
	"math"
	"testing"
)

// naiveQuant2 quantises and dequantises one block to 2-bit levels the obvious way: every
// candidate scale, every level tried for every value.
func naiveQuant2(block []float64) []float64 {
	m := 0.0
	for _, v := range block {
		m = math.Max(m, math.Abs(v))
	}
	var best []float64
	bestErr := math.Inf(1)
	for _, f := range scaleFractions {
		s := naiveBF16Up(m / 3 * f)
		out := make([]float64, len(block))
		e := 0.0
		for i, v := range block {
			if s == 0 {
				continue
			}
			lv := 3.0 // the nearest level, ties to the larger
			for _, l := range []float64{-3, -1, 1, 3} {
				if math.Abs(v-l*s) < math.Abs(v-lv*s) || (math.Abs(v-l*s) == math.Abs(v-lv*s) && l > lv) {
					lv = l
				}
			}
			out[i] = lv * s
			e += (v - out[i]) * (v - out[i])
		}
		if e < bestErr {
			best, bestErr = out, e
		}
	}
	return best
}

func TestQuantise2MatchesNaive(t *testing.T) {
	rng := newRand(2)
	for trial := 0; trial < 300; trial++ {
		block := []int{8, 32, 64}[trial%3]
		n := 1 + rng.IntN(200)
		vals := randTensor(rng, "", math.Pow(10, float64(rng.IntN(40)-30)), n).Data
		if trial%7 == 0 {
			for i := 0; i < min(block, n); i++ {
				vals[i] = 0
			}
		}
		codes := make([]byte, codeBytes(n, bits2))
		scales := make([]byte, scaleBytes(n, bits2, block))
		if err := quantise2(codes, scales, vals, block); err != nil {
			t.Fatal(err)
		}
		if !codesCanonical(codes, n, bits2) {
			t.Fatalf("trial %d: non-zero padding bits", trial)
		}
		got := make([]float64, n)
		dequantise(got, codes, scales, bits2, block)
		for b := 0; b*block < n; b++ {
			lo, hi := b*block, min((b+1)*block, n)
			want := naiveQuant2(vals[lo:hi])
			for i := lo; i < hi; i++ {
				if got[i] != want[i-lo] {
					t.Fatalf("trial %d: value %d dequantises to %v, naive %v", trial, i, got[i], want[i-lo])
				}
			}
		}
	}
}

// At one byte budget, 2-bit factors buy about twice the rank of 4-bit ones, and 1-bit ones
// at least half as much again (a block's scale costs what 16 one-bit codes do); the
// payload stays within the budget, and the shards decode, check and join as 4-bit ones do.
func TestFactorBits2DoublesRankInBudget(t *testing.T) {
	rng := newRand(3)
	ts := []Tensor{randTensor(rng, "w", 1, 128, 96), randTensor(rng, "b", 1, 96)}
	shapes := map[string][]int{"w": {128, 96}, "b": {96}}
	const budget = 2000
	rank := map[int]int{}
	for _, fb := range []int{4, 2, 1} {
		e := mustEncoder(t, Config{RankMin: 1, RankMax: 64, MinLowRank: 256, ByteBudget: budget, FactorBits: fb, MaxShardBytes: MinShardBytes})
		for round := 0; round < 3; round++ {
			m := mustEncode(t, e, ts)
			if n := m.PayloadBytes(); n > budget {
				t.Fatalf("%d-bit factors: payload %d over the budget %d", fb, n, budget)
			}
			shards, err := m.Shards()
			if err != nil {
				t.Fatal(err)
			}
			var parts []*Message
			for _, s := range shards {
				if err := CheckShard(s.Data, shapes, math.Inf(1), DefaultLimits); err != nil {
					t.Fatalf("%d-bit factors: %v", fb, err)
				}
				p, err := DecodeShard(s.Data, DefaultLimits)
				if err != nil {
					t.Fatal(err)
				}
				parts = append(parts, p)
			}
			j, err := Join(parts)
			if err != nil || !bytes.Equal(mustBytes(t, j), mustBytes(t, m)) {
				t.Fatalf("%d-bit factors: joined shards differ from the message (%v)", fb, err)
			}
		}
		rank[fb] = statOf(t, e, "w").Rank
	}
	if rank[2] < 2*rank[4]-1 || 2*rank[1] < 3*rank[2] {
		t.Fatalf("rank %d with 1-bit factors, %d with 2-bit, %d with 4-bit", rank[1], rank[2], rank[4])
	}
}

// The decoder refuses 2-bit codes where the encoder never writes them: a dense piece, a
// block size that splits a code byte, non-zero padding.
func TestDecodeShardRefusesBad2Bit(t *testing.T) {
	rng := newRand(4)
	e := mustEncoder(t, Config{RankMax: 2, MinLowRank: 16, FactorBits: 2, BlockSize: 8})
	m := mustEncode(t, e, []Tensor{randTensor(rng, "w", 1, 7, 5), randTensor(rng, "v", 1, 3)})
	if _, err := DecodeShard(mustBytes(t, m), DefaultLimits); err != nil {
		t.Fatal(err)
	}
	cases := map[string]func(w *wireMessage){
		"dense 2-bit": func(w *wireMessage) {
			p := &w.Pieces[1]
			p.Bits, p.Codes = bits2, p.Codes[:codeBytes(3, bits2)]
		},
		"block 10": func(w *wireMessage) { w.Block = 10 },
		"padding":  func(w *wireMessage) { w.Pieces[0].Codes[len(w.Pieces[0].Codes)-1] |= 0xc0 },
	}
	for name, mut := range cases {
		w := wireOf(m)
		mut(&w)
		if _, err := DecodeShard(encodeWire(t, w), DefaultLimits); !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrNonCanonical) {
			t.Errorf("%s: got %v", name, err)
		}
	}
}

// statOf is the encoder's statistics of tensor name.
func statOf(t *testing.T, e *Encoder, name string) TensorStats {
	t.Helper()
	for _, s := range e.Stats() {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no statistics of %q", name)
	return TensorStats{}
}
