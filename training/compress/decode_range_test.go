package compress

import (
	"errors"
	"math"
	"testing"
)

// flatViews lays ts out as views into one flat vector filled with v.
func flatViews(ts []Tensor, v float64) ([]Tensor, []float64) {
	n := 0
	for _, t := range ts {
		n += numel(t.Shape)
	}
	flat := make([]float64, n)
	for i := range flat {
		flat[i] = v
	}
	out := make([]Tensor, len(ts))
	off := 0
	for i, t := range ts {
		k := numel(t.Shape)
		out[i] = Tensor{Name: t.Name, Shape: t.Shape, Data: flat[off : off+k]}
		off += k
	}
	return out, flat
}

func TestRangeReaderMatchesDecodeInto(t *testing.T) {
	rng := newRand(41)
	cfgs := []Config{
		{RankMin: 3, RankMax: 3, MinLowRank: 16, BlockSize: 8},
		{RankMin: 5, RankMax: 5, MinLowRank: 16, FactorBits: 2, DenseBits: 4, BlockSize: 16},
		{RankMin: 4, RankMax: 4, MinLowRank: 16, FactorBits: 1, DenseBits: 4, BlockSize: 8},
		{RankMin: 2, RankMax: 2, MinLowRank: 16, DenseBits: 8, BlockSize: 32},
		{RankMin: 2, RankMax: 2, MinLowRank: 16, NoQuant: true},
	}
	for ci, cfg := range cfgs {
		e := mustEncoder(t, cfg)
		ts := []Tensor{randTensor(rng, "w", 1, 40, 33), randTensor(rng, "b", 1, 37), randTensor(rng, "v", 1, 9, 3)}
		m := mustEncode(t, e, ts)
		// The receiver's order differs from the message's.
		like := []Tensor{{Name: "v", Shape: []int{9, 3}}, {Name: "w", Shape: []int{40, 33}}, {Name: "b", Shape: []int{37}}}
		views, want := flatViews(like, 0)
		if err := m.DecodeInto(views); err != nil {
			t.Fatal(err)
		}
		r, err := m.NewRangeReader(like)
		if err != nil || r.Len() != len(want) {
			t.Fatalf("config %d: reader of %v values: %v", ci, r, err)
		}
		for _, chunk := range []int{1, 7, 33, 100, len(want)} {
			got := make([]float64, len(want))
			for lo := 0; lo < len(want); lo += chunk {
				hi := min(lo+chunk, len(want))
				dst := got[lo:hi]
				for i := range dst {
					dst[i] = math.NaN()
				}
				if err := r.Read(lo, hi, dst); err != nil {
					t.Fatalf("config %d chunk %d [%d, %d): %v", ci, chunk, lo, hi, err)
				}
			}
			for i := range want {
				if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
					t.Fatalf("config %d chunk %d: value %d is %v, DecodeInto wrote %v", ci, chunk, i, got[i], want[i])
				}
			}
		}
	}
}

func TestRangeReaderOfJoinedShards(t *testing.T) {
	big, _ := shardSample(t)
	shards, err := big.Shards()
	if err != nil || len(shards) < 2 {
		t.Fatalf("%d shards: %v", len(shards), err)
	}
	parts := make([]*Message, len(shards))
	for i, s := range shards {
		if parts[i], err = DecodeShard(s.Data, DefaultLimits); err != nil {
			t.Fatal(err)
		}
	}
	m, err := Join(parts)
	if err != nil {
		t.Fatal(err)
	}
	like := zeroLike(mustDecode(t, big), 0)
	for i := range like {
		like[i].Data = nil
	}
	views, want := flatViews(like, 0)
	if err := m.DecodeInto(views); err != nil {
		t.Fatal(err)
	}
	r, err := m.NewRangeReader(like)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]float64, len(want))
	for lo := 0; lo < len(want); lo += 1000 {
		hi := min(lo+1000, len(want))
		if err := r.Read(lo, hi, got[lo:hi]); err != nil {
			t.Fatal(err)
		}
	}
	for i := range want {
		if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
			t.Fatalf("value %d is %v, DecodeInto wrote %v", i, got[i], want[i])
		}
	}
	// A lone shard does not cover the tensors: refused as DecodeInto refuses it.
	if _, err := parts[0].NewRangeReader(like); !errors.Is(err, ErrMalformed) {
		t.Errorf("lone shard: %v, want ErrMalformed", err)
	}
	if err := r.Read(0, len(want)+1, make([]float64, len(want)+1)); !errors.Is(err, ErrInput) {
		t.Errorf("range past the end: %v, want ErrInput", err)
	}
}
