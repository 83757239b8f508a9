package compress

import (
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"sort"
	"testing"
)

// naiveTopK is the reference selection: every value of the model by magnitude (largest
// first; ties to the earlier tensor, then the lower index), the longest prefix whose sparse
// pieces fit the budget, found by trying every count.
func naiveTopK(xs [][]float64, budget, bits, block int) [][]int {
	type e struct {
		mag  float64
		t, i int
	}
	var all []e
	for t, x := range xs {
		for i, v := range x {
			if v != 0 {
				all = append(all, e{math.Abs(v), t, i})
			}
		}
	}
	sort.SliceStable(all, func(a, b int) bool { return all[a].mag > all[b].mag }) // stable: (t, i) order kept among ties
	var best [][]int
	for k := 0; k <= len(all); k++ {
		sel := make([][]int, len(xs))
		for _, x := range all[:k] {
			sel[x.t] = append(sel[x.t], x.i)
		}
		n := 0
		for _, s := range sel {
			slices.Sort(s)
			n += sparseBytes(s, bits, block)
		}
		if n > budget {
			break
		}
		best = sel
	}
	return best
}

func topkInputs(rng interface {
	NormFloat64() float64
	IntN(int) int
}) []Tensor {
	shapes := [][]int{{30, 20}, {20}, {400}, {7, 3}}
	names := []string{"w", "b", "long", "s"}
	ts := make([]Tensor, len(shapes))
	for i, s := range shapes {
		ts[i] = Tensor{Name: names[i], Shape: s, Data: make([]float64, numel(s))}
		for j := range ts[i].Data {
			v := rng.NormFloat64()
			if rng.IntN(8) == 0 {
				v = float64(rng.IntN(3)) // ties, and zeros
			}
			ts[i].Data[j] = v
		}
	}
	return ts
}

// Top-k: every round's message holds exactly the reference's selection (which its payload
// fits), decodes to zero elsewhere, goes through the wire, shards and the content check,
// and the residuals equal the reference's error feedback bit for bit.
func TestTopKMatchesReference(t *testing.T) {
	rng := newRand(31)
	for trial := 0; trial < 6; trial++ {
		decay := []float64{1, 0.9}[trial%2]
		cfg := Config{Codec: CodecTopK, ByteBudget: 40 + 60*trial, DenseBits: []int{4, 8}[trial%2], BlockSize: 8, FeedbackDecay: decay, MaxShardBytes: MinShardBytes}
		e := mustEncoder(t, cfg)
		ref := &naiveFeedback{decay: decay, res: map[string][]float64{}}
		for r := 0; r < 5; r++ {
			ts := topkInputs(rng)
			xs := make([][]float64, len(ts))
			for i, tt := range ts {
				xs[i] = ref.input(tt)
			}
			want := naiveTopK(xs, cfg.ByteBudget, cfg.DenseBits, cfg.BlockSize)
			m, err := e.EncodeRound(uint64(r), ts)
			if err != nil {
				t.Fatal(err)
			}
			if b := m.PayloadBytes(); b > cfg.ByteBudget {
				t.Fatalf("trial %d round %d: %d bytes over the budget %d", trial, r, b, cfg.ByteBudget)
			}
			// Through the wire: shards, checks, join.
			shards, err := m.Shards()
			if err != nil {
				t.Fatal(err)
			}
			shapes := map[string][]int{}
			for _, tt := range ts {
				shapes[tt.Name] = tt.Shape
			}
			parts := make([]*Message, len(shards))
			for i, s := range shards {
				if err := CheckShard(s.Data, shapes, math.Inf(1), DefaultLimits); err != nil {
					t.Fatalf("trial %d round %d: shard %d: %v", trial, r, i, err)
				}
				parts[i], _ = DecodeShard(s.Data, DefaultLimits)
			}
			joined, err := Join(parts)
			if err != nil {
				t.Fatal(err)
			}
			got := mustDecode(t, joined)
			for i, tt := range ts {
				idx, err := m.pieces[i].indices(len(tt.Data))
				if err != nil || !slices.Equal(idx, want[i]) && !(len(idx) == 0 && len(want[i]) == 0) {
					t.Fatalf("trial %d round %d: %q indices %v, reference %v (%v)", trial, r, tt.Name, idx, want[i], err)
				}
				for j, v := range got[i].Data {
					if v != 0 && !slices.Contains(idx, j) {
						t.Fatalf("trial %d round %d: %q value %d not selected but %g", trial, r, tt.Name, j, v)
					}
				}
				ref.keep(tt.Name, xs[i], got[i].Data)
				if !slices.Equal(floatBitsOf(e.state[tt.Name].residual), floatBitsOf(ref.res[tt.Name])) {
					t.Fatalf("trial %d round %d: %q residual differs from the reference", trial, r, tt.Name)
				}
			}
		}
	}
}

// Sparse pieces from a peer are refused when their indices are not canonical, not
// increasing within the tensor, or do not match the codes; indices in a piece that is not
// sparse are refused; a top-k config needs a budget and no DenseEvery.
func TestSparseWireRefusals(t *testing.T) {
	e := mustEncoder(t, Config{Codec: CodecTopK, ByteBudget: 60, BlockSize: 8})
	m, err := e.EncodeRound(0, topkInputs(newRand(2)))
	if err != nil {
		t.Fatal(err)
	}
	k := slices.IndexFunc(m.pieces, func(p piece) bool { return len(p.Idx) > 1 })
	if k < 0 {
		t.Fatal("no piece with two indices")
	}
	for name, bad := range map[string]func(p *piece){
		"long varint":  func(p *piece) { p.Idx = append([]byte{p.Idx[0] | 0x80, 0}, p.Idx[1:]...) },
		"past the end": func(p *piece) { p.Idx = binary.AppendUvarint(nil, uint64(numel(p.Shape))) },
		"extra index":  func(p *piece) { p.Idx = append(p.Idx, 0) },
		"split":        func(p *piece) { p.Hi-- },
		"low-rank":     func(p *piece) { p.Rank = 1 },
		"not sparse":   func(p *piece) { p.Sparse = false },
	} {
		w := wireMessage{Version: Version, Part: 0, Parts: 1, Block: m.block, Pieces: slices.Clone(m.pieces)}
		bad(&w.Pieces[k])
		data, err := encMode.Marshal(&w)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := DecodeShard(data, DefaultLimits); !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrNonCanonical) {
			t.Errorf("%s: %v, want ErrMalformed", name, err)
		}
	}
	if _, err := mustEncoder(t, Config{Codec: CodecTopK}).EncodeRound(0, topkInputs(newRand(2))); !errors.Is(err, ErrConfig) {
		t.Errorf("top-k without a budget: %v, want ErrConfig", err)
	}
	for _, c := range []Config{{Codec: "dct"}, {Codec: CodecTopK, DenseEvery: 2, ByteBudget: 9}} {
		if err := c.Validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: %v, want ErrConfig", c, err)
		}
	}
}
