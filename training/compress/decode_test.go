package compress

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
)

// zeroLike returns tensors of the same names and shapes, with fresh data set to v.
func zeroLike(ts []Tensor, v float64) []Tensor {
	out := make([]Tensor, len(ts))
	for i, t := range ts {
		d := make([]float64, len(t.Data))
		for j := range d {
			d[j] = v
		}
		out[i] = Tensor{Name: t.Name, Shape: t.Shape, Data: d}
	}
	return out
}

func sameBits(a, b []Tensor) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || len(a[i].Data) != len(b[i].Data) {
			return false
		}
		for j := range a[i].Data {
			if math.Float64bits(a[i].Data[j]) != math.Float64bits(b[i].Data[j]) {
				return false
			}
		}
	}
	return true
}

func TestDecodeIntoMatchesDecode(t *testing.T) {
	rng := newRand(21)
	for _, rank := range []int{1, 2, 3, 4, 5, 7, 9} {
		e := mustEncoder(t, Config{RankMin: rank, RankMax: rank, MinLowRank: 16, MaxShardBytes: MinShardBytes})
		ts := []Tensor{randTensor(rng, "w", 1, 40, 33), randTensor(rng, "b", 1, 33), randTensor(rng, "v", 1, 9, 3)}
		m := mustEncode(t, e, ts)
		want := mustDecode(t, m)
		got := zeroLike(want, math.NaN()) // every value must be overwritten
		if err := m.DecodeInto(got); err != nil {
			t.Fatalf("rank %d: %v", rank, err)
		}
		if !sameBits(got, want) {
			t.Errorf("rank %d: DecodeInto differs from Decode", rank)
		}
		// The destination order is the receiver's, not the message's.
		rev := []Tensor{got[2], got[0], got[1]}
		rev = zeroLike(rev, 0)
		if err := m.DecodeInto(rev); err != nil || !sameBits([]Tensor{rev[1], rev[2], rev[0]}, want) {
			t.Errorf("rank %d: reordered destination: %v", rank, err)
		}
	}
}

func TestDecodeIntoRejects(t *testing.T) {
	rng := newRand(22)
	e := mustEncoder(t, Config{RankMin: 2, RankMax: 2, MinLowRank: 16, MaxShardBytes: MinShardBytes})
	m := mustEncode(t, e, []Tensor{randTensor(rng, "w", 1, 300, 40), randTensor(rng, "b", 1, 40)})
	want := mustDecode(t, m)
	big, _ := shardSample(t) // big enough to split
	shards, err := big.Shards()
	if err != nil || len(shards) < 2 {
		t.Fatalf("%d shards: %v", len(shards), err)
	}
	part, err := DecodeShard(shards[0].Data, DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		msg *Message
		dst []Tensor
		is  error
	}{
		"missing tensor":    {m, append(zeroLike(want, 0), Tensor{Name: "x", Shape: []int{2}, Data: make([]float64, 2)}), ErrMalformed},
		"unexpected tensor": {m, zeroLike(want[:1], 0), ErrMalformed},
		"wrong shape":       {m, []Tensor{{Name: "w", Shape: []int{40, 300}, Data: make([]float64, 12000)}, zeroLike(want, 0)[1]}, ErrMalformed},
		"partial coverage":  {part, zeroLike(mustDecode(t, big), 0), ErrMalformed},
		"bad destination":   {m, []Tensor{{Name: "w", Shape: []int{300, 40}, Data: make([]float64, 5)}}, ErrInput},
		"repeated dest":     {m, append(zeroLike(want, 0), zeroLike(want, 0)[0]), ErrInput},
	}
	for name, c := range cases {
		if err := c.msg.DecodeInto(c.dst); !errors.Is(err, c.is) {
			t.Errorf("%s: %v, want %v", name, err, c.is)
		}
	}
}

// manyPieces returns a message whose one dense tensor "v" (8·k int8 values, block 8) is cut
// into k pieces of one block each, in reverse order.
func manyPieces(t testing.TB, k int) *Message {
	t.Helper()
	e := mustEncoder(t, Config{BlockSize: 8})
	whole := mustEncode(t, e, []Tensor{randTensor(newRand(23), "v", 1, 8*k)})
	p := whole.pieces[0]
	m := &Message{parts: 1, block: 8, maxShard: DefaultMaxShardBytes}
	for i := k - 1; i >= 0; i-- {
		m.pieces = append(m.pieces, p.slice(8*i, 8*i+8, 8))
	}
	return m
}

// BenchmarkDecodePieces decodes one tensor cut into many pieces, with DecodeInto and Decode.
// The work per piece (ns/piece) must not grow with the number of pieces: checking every pair
// for overlap makes it linear in the number of pieces, and a message's decoding quadratic.
func BenchmarkDecodePieces(b *testing.B) {
	for _, k := range []int{256, 1024, 4096} {
		m := manyPieces(b, k)
		dst := []Tensor{{Name: "v", Shape: []int{8 * k}, Data: make([]float64, 8*k)}}
		b.Run(fmt.Sprintf("into/pieces=%d", k), func(b *testing.B) {
			for b.Loop() {
				if err := m.DecodeInto(dst); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*k), "ns/piece")
		})
		b.Run(fmt.Sprintf("alloc/pieces=%d", k), func(b *testing.B) {
			for b.Loop() {
				mustDecode(b, m)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*k), "ns/piece")
		})
	}
}

// Pieces of one tensor that overlap are refused by Decode and DecodeInto, wherever they sit
// among many pieces; pieces in any order that do not overlap are accepted.
func TestDecodeRefusesOverlappingPieces(t *testing.T) {
	const k = 300
	m := manyPieces(t, k)
	whole := m.pieces
	two := mustEncode(t, mustEncoder(t, Config{BlockSize: 8}), []Tensor{randTensor(newRand(23), "v", 1, 8*k)}).pieces[0] // the same tensor, one piece
	cases := map[string][]piece{
		"duplicate last":    append(slices.Clone(whole), whole[0]),
		"duplicate first":   append([]piece{whole[k/2]}, whole...),
		"straddling two":    append(slices.Clone(whole[:k/2]), append([]piece{two.slice(80, 96, 8)}, whole[k/2:]...)...),
		"covering all":      append(slices.Clone(whole), two),
		"same start, wider": append([]piece{two.slice(0, 16, 8)}, whole...),
	}
	dst := []Tensor{{Name: "v", Shape: []int{8 * k}, Data: make([]float64, 8*k)}}
	for name, ps := range cases {
		bad := &Message{parts: 1, block: 8, pieces: ps}
		if err := bad.DecodeInto(dst); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: DecodeInto gave %v, want ErrMalformed", name, err)
		}
		if _, err := bad.Decode(); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: Decode gave %v, want ErrMalformed", name, err)
		}
	}
	shuffled := slices.Clone(whole)
	newRand(25).Shuffle(k, func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	good := &Message{parts: 1, block: 8, pieces: shuffled}
	want, err := (&Message{parts: 1, block: 8, pieces: []piece{two}}).Decode()
	if err != nil {
		t.Fatal(err)
	}
	if err := good.DecodeInto(dst); err != nil || !sameBits(dst, want) {
		t.Fatalf("shuffled pieces: %v", err)
	}
}
