package compress

import (
	"bytes"
	"errors"
	"math"
	"testing"
)

// naiveQuant1 quantises and dequantises one block to signs the obvious way: the mean |v|
// rounded up to a bfloat16, times the sign (+ for 0).
func naiveQuant1(block []float64) []float64 {
	var sum float64
	for _, v := range block {
		sum += math.Abs(v)
	}
	s := naiveBF16Up(sum / float64(len(block)))
	out := make([]float64, len(block))
	for i, v := range block {
		out[i] = s
		if v < 0 {
			out[i] = -s
		}
	}
	return out
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

func TestQuantise1MatchesNaive(t *testing.T) {
	rng := newRand(12)
	for trial := 0; trial < 300; trial++ {
		block := []int{8, 32, 64}[trial%3]
		n := 1 + rng.IntN(200)
		vals := randTensor(rng, "", math.Pow(10, float64(rng.IntN(40)-30)), n).Data
		if trial%7 == 0 {
			for i := 0; i < min(block, n); i++ {
				vals[i] = 0
			}
		}
		codes := make([]byte, codeBytes(n, bits1))
		scales := make([]byte, scaleBytes(n, bits1, block))
		if err := quantise1(codes, scales, vals, block); err != nil {
			t.Fatal(err)
		}
		if !codesCanonical(codes, n, bits1) {
			t.Fatalf("trial %d: non-zero padding bits", trial)
		}
		got := make([]float64, n)
		dequantise(got, codes, scales, bits1, block)
		ranged := make([]float64, n-n/3)
		dequantiseRange(ranged, codes, scales, bits1, block, n/3)
		for b := 0; b*block < n; b++ {
			lo, hi := b*block, min((b+1)*block, n)
			want := naiveQuant1(vals[lo:hi])
			for i := lo; i < hi; i++ {
				if got[i] != want[i-lo] && !(got[i] == 0 && want[i-lo] == 0) {
					t.Fatalf("trial %d: value %d dequantises to %v, naive %v", trial, i, got[i], want[i-lo])
				}
				if i >= n/3 && math.Float64bits(ranged[i-n/3]) != math.Float64bits(got[i]) {
					t.Fatalf("trial %d: value %d reads %v by range, %v whole", trial, i, ranged[i-n/3], got[i])
				}
			}
		}
	}
}

// 1-bit factors buy more rank than 2-bit ones at one byte budget, within the budget, and
// their shards decode, check and join; the decoder refuses 1-bit codes in a dense piece,
// with a block size that is not a multiple of 8, or with padding bits set.
func TestFactorBits1(t *testing.T) {
	rng := newRand(13)
	ts := []Tensor{randTensor(rng, "w", 1, 128, 96), randTensor(rng, "b", 1, 96)}
	shapes := map[string][]int{"w": {128, 96}, "b": {96}}
	const budget = 2000
	rank := map[int]int{}
	for _, fb := range []int{2, 1} {
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
	if rank[1] <= rank[2] {
		t.Fatalf("rank %d with 1-bit factors, %d with 2-bit", rank[1], rank[2])
	}
	if _, err := NewEncoder(Config{FactorBits: 1, BlockSize: 12}); !errors.Is(err, ErrConfig) {
		t.Fatalf("1-bit factors with block 12: %v", err)
	}
	e := mustEncoder(t, Config{RankMax: 2, MinLowRank: 16, FactorBits: 1, BlockSize: 8})
	m := mustEncode(t, e, []Tensor{randTensor(rng, "w", 1, 7, 5), randTensor(rng, "v", 1, 3)})
	if _, err := DecodeShard(mustBytes(t, m), DefaultLimits); err != nil {
		t.Fatal(err)
	}
	cases := map[string]func(w *wireMessage){
		"dense 1-bit": func(w *wireMessage) {
			p := &w.Pieces[1]
			p.Bits, p.Codes = bits1, p.Codes[:codeBytes(3, bits1)]
		},
		"block 12": func(w *wireMessage) { w.Block = 12 },
		"padding":  func(w *wireMessage) { w.Pieces[0].Codes[len(w.Pieces[0].Codes)-1] |= 0x80 },
	}
	for name, mut := range cases {
		w := wireOf(m)
		mut(&w)
		if _, err := DecodeShard(encodeWire(t, w), DefaultLimits); !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrNonCanonical) {
			t.Errorf("%s: got %v", name, err)
		}
	}
}
