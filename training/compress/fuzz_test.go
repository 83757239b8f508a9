package compress

import (
	"bytes"
	"errors"
	"math"
	"testing"
)

func FuzzDecodeShard(f *testing.F) {
	m := sample(f)
	f.Add(mustBytes(f, m))
	big, _ := shardSample(f)
	shards, err := big.Shards()
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range shards[:4] {
		f.Add(s.Data)
	}
	e := mustEncoder(f, Config{MinLowRank: 16, DenseBits: 4, RankMax: 2})
	rng := newRand(14)
	f.Add(mustBytes(f, mustEncode(f, e, []Tensor{randTensor(rng, "w", 1, 6, 5), randTensor(rng, "v", 1, 3)})))
	e2 := mustEncoder(f, Config{MinLowRank: 16, RankMax: 3, FactorBits: 2, BlockSize: 8})
	f.Add(mustBytes(f, mustEncode(f, e2, []Tensor{randTensor(rng, "w", 1, 7, 5), randTensor(rng, "v", 1, 3)})))
	e1 := mustEncoder(f, Config{MinLowRank: 16, RankMax: 3, FactorBits: 1, BlockSize: 8})
	f.Add(mustBytes(f, mustEncode(f, e1, []Tensor{randTensor(rng, "w", 1, 9, 5), randTensor(rng, "v", 1, 3)})))
	e3 := mustEncoder(f, Config{Codec: CodecTopK, ByteBudget: 24, BlockSize: 8}) // sparse pieces
	f.Add(mustBytes(f, mustEncode(f, e3, []Tensor{randTensor(rng, "w", 1, 7, 5), randTensor(rng, "v", 1, 300)})))
	sc := Config{SharedRank: 3, MinLowRank: 16, RankMax: 2, FactorBits: 2, BlockSize: 8}
	sw := rankK(rng, "w", 9, 6, 3)
	sb, err := DeriveBases(sc, []Tensor{sw})
	if err != nil {
		f.Fatal(err)
	}
	sm, err := mustEncoder(f, sc).EncodeRoundShared(0, []Tensor{sw, randTensor(rng, "v", 1, 3)}, sb)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(mustBytes(f, sm))   // shared coordinates
	many := manyPieces(f, 80) // one tensor in 80 pieces, in reverse order
	f.Add(mustBytes(f, many))
	many.pieces = append(many.pieces, many.pieces[40]) // and one overlap
	f.Add(mustBytes(f, many))
	f.Add([]byte{})
	f.Add([]byte{0xa0})
	lim := Limits{MaxBytes: 1 << 16, MaxTensors: 128, MaxElements: 1 << 16, MaxRank: 16}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := DecodeShard(data, lim)
		if err != nil {
			return
		}
		again, err := m.Bytes()
		if err != nil || !bytes.Equal(again, data) {
			t.Fatalf("accepted input does not re-encode to itself: %v", err)
		}
		if m, err = m.WithBases(fuzzBases(m)); err != nil {
			t.Fatalf("binding bases of the pieces' own shapes: %v", err)
		}
		ts, err := m.Decode()
		shapes := map[string][]int{}
		for _, tt := range ts {
			shapes[tt.Name] = tt.Shape
		}
		if err == nil {
			into := zeroLike(ts, 0)
			if derr := m.DecodeInto(into); derr == nil && !sameBits(into, ts) {
				t.Fatal("DecodeInto and Decode disagree")
			} else if derr != nil && !errors.Is(derr, ErrMalformed) {
				t.Fatalf("DecodeInto failed where Decode did not: %v", derr)
			}
		}
		if cerr := m.Check(shapes, math.Inf(1)); (err == nil) != (cerr == nil) && len(shapes) == len(m.pieces) {
			t.Fatalf("Decode and Check disagree: %v / %v", err, cerr)
		}
		if ss, verr := m.valuesSumSquares(); verr == nil {
			for _, maxNorm := range probeNorms(math.Sqrt(ss)) {
				verdictsAgree(t, m, shapes, maxNorm)
			}
		}
	})
}

// fuzzBases gives every piece with shared coordinates a basis of its rows: the first
// columns of the identity, orthonormal as a derived basis is.
func fuzzBases(m *Message) Bases {
	b := Bases{}
	for _, p := range m.pieces {
		if p.SRank == 0 {
			continue
		}
		rows, k := p.Shape[0], p.SRank
		if old := b[p.Name]; old != nil && old.K >= k {
			continue
		}
		u := make([]float64, rows*k)
		for c := 0; c < k; c++ {
			u[c*k+c] = 1
		}
		b[p.Name] = &Basis{Rows: rows, K: k, U: u}
	}
	return b
}
