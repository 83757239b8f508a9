package compress

import (
	"errors"
	"math"
	"slices"
	"testing"
)

// readAll reads r in chunks of chunk values, into a vector first filled with NaN.
func readAll(t *testing.T, r *RangeReader, chunk int) []float64 {
	t.Helper()
	got := make([]float64, r.Len())
	for i := range got {
		got[i] = math.NaN()
	}
	for lo := 0; lo < len(got); lo += chunk {
		hi := min(lo+chunk, len(got))
		if err := r.Read(lo, hi, got[lo:hi]); err != nil {
			t.Fatal(err)
		}
	}
	return got
}

// A range reader of a round's message under dense_every, and of a top-k message, reads
// the bits DecodeDue writes (a tensor not due zero, the sparse values where they belong),
// in any chunking, and refuses what DecodeDue refuses.
func TestRangeReaderDueAndSparseMatchDecodeDue(t *testing.T) {
	rng := newRand(77)
	like := func(ts []Tensor) []Tensor {
		out := make([]Tensor, len(ts))
		for i, x := range ts {
			out[i] = Tensor{Name: x.Name, Shape: slices.Clone(x.Shape)}
		}
		return out
	}
	check := func(name string, m *Message, l []Tensor, due []bool) {
		views, want := flatViews(l, 3) // DecodeDue clears what is not due
		if err := m.DecodeDue(views, due); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		r, err := m.NewRangeReaderDue(l, due)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, chunk := range []int{1, 5, 64, len(want)} {
			if got := readAll(t, r, chunk); !slices.Equal(floatBitsOf(got), floatBitsOf(want)) {
				t.Fatalf("%s, chunks of %d: the reader's values differ from DecodeDue's", name, chunk)
			}
		}
	}
	cfg := Config{MinLowRank: 64, RankMax: 3, DenseEvery: 3}
	e := mustEncoder(t, cfg)
	for r := uint64(0); r < 4; r++ {
		in := dueInputs(rng, int(r))
		m, err := e.EncodeRound(r, in)
		if err != nil {
			t.Fatal(err)
		}
		check("dense_every", m, like(in), cfg.Due(r, dueShapes))
		if _, err := m.NewRangeReaderDue(like(in), cfg.Due(r+1, dueShapes)); !errors.Is(err, ErrMalformed) {
			t.Fatalf("round %d's message read for round %d: %v, want ErrMalformed", r, r+1, err)
		}
	}
	te := mustEncoder(t, Config{Codec: CodecTopK, ByteBudget: 200, BlockSize: 8})
	for r := uint64(0); r < 3; r++ {
		in := topkInputs(rng)
		m, err := te.EncodeRound(r, in)
		if err != nil {
			t.Fatal(err)
		}
		check("top-k", m, like(in), nil)
	}
}

// A network of the low-rank codec (Limits.NoSparse) refuses a top-k message's shards at
// decoding; other limits take them.
func TestNoSparseRefusesTopKShards(t *testing.T) {
	e := mustEncoder(t, Config{Codec: CodecTopK, ByteBudget: 200, BlockSize: 8})
	m, err := e.EncodeRound(0, topkInputs(newRand(5)))
	if err != nil {
		t.Fatal(err)
	}
	shards, err := m.Shards()
	if err != nil {
		t.Fatal(err)
	}
	lim := DefaultLimits
	for _, sh := range shards {
		if _, err := DecodeShard(sh.Data, lim); err != nil {
			t.Fatalf("a top-k shard under the default limits: %v", err)
		}
	}
	lim.NoSparse = true
	for _, sh := range shards {
		if _, err := DecodeShard(sh.Data, lim); !errors.Is(err, ErrMalformed) {
			t.Fatalf("a top-k shard with NoSparse: %v, want ErrMalformed", err)
		}
	}
}
