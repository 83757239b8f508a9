package compress

import (
	"encoding/binary"
	"testing"
)

// levelsRef counts the levels of the 2-bit factor codes of m from the dequantised
// values, column by column: a value is level·scale exactly, so level = value/scale (a
// block of scale 0 holds the level 1 only).
func levelsRef(m *Message, block int) (counts [4]int) {
	col := func(codes, scales []byte, n, ncol int) {
		cb, sb := codeBytes(n, bits2), scaleBytes(n, bits2, block)
		out := make([]float64, n)
		for k := 0; k < ncol; k++ {
			dequantise2(out, codes[k*cb:(k+1)*cb], scales[k*sb:(k+1)*sb], block)
			for i, v := range out {
				s := bf16(binary.LittleEndian.Uint16(scales[k*sb+2*(i/block):]))
				level := 1
				if s > 0 {
					level = int(v / s)
				}
				counts[(level+3)/2]++
			}
		}
	}
	for _, p := range m.pieces {
		if !p.lowRank() || p.Bits != bits2 {
			continue
		}
		col(p.Codes, p.Scales, p.Hi-p.Lo, p.Rank)
		col(p.QCodes, p.QScales, p.Shape[1], p.Rank)
	}
	return counts
}

// CodeStats counts every 2-bit factor code once, padding left out, as the reference
// counts them from the values, in a message and in each of its shards; its bytes by kind
// add up to the payload; the shards of a message add up to it, but for the Q factor of a
// matrix split across them, which each carries whole; a 4-bit message has no 2-bit codes.
func TestCodeStatsMatchesReference(t *testing.T) {
	rng := newRand(13)
	for trial := 0; trial < 10; trial++ {
		cfg := Config{MinLowRank: 64, RankMax: 6, FactorBits: 2, DenseEvery: trial % 3, BlockSize: 8 << (trial % 3),
			MaxShardBytes: MinShardBytes, Seed: uint64(trial)}
		if trial%2 == 1 {
			cfg.ByteBudget = 200 + rng.IntN(400)
		}
		e := mustEncoder(t, cfg)
		for r := 0; r < 4; r++ {
			m, err := e.EncodeRound(uint64(r), fragInputs(rng, r))
			if err != nil {
				t.Fatal(err)
			}
			s := m.CodeStats()
			if ref := levelsRef(m, e.Config().BlockSize); s.Codes2 != ref {
				t.Fatalf("trial %d round %d: codes %v, reference %v", trial, r, s.Codes2, ref)
			}
			n := 0
			for _, p := range m.pieces {
				if p.lowRank() {
					n += (p.Hi-p.Lo)*p.Rank + p.Shape[1]*p.Rank
				}
			}
			if got := s.Codes2[0] + s.Codes2[1] + s.Codes2[2] + s.Codes2[3]; got != n || n == 0 {
				t.Fatalf("trial %d round %d: %d codes counted, %d factor values", trial, r, got, n)
			}
			if got := s.FactorCodeBytes + s.FactorScaleBytes + s.DenseBytes; got != m.PayloadBytes() || s.IndexBytes != 0 {
				t.Fatalf("trial %d round %d: %+v for a payload of %d", trial, r, s, m.PayloadBytes())
			}
			shards, err := m.ShardsOf(MinShardBytes)
			if err != nil {
				t.Fatal(err)
			}
			var sum CodeStats
			for _, sh := range shards {
				p, err := DecodeShard(sh.Data, DefaultLimits)
				if err != nil {
					t.Fatal(err)
				}
				sum.Add(p.CodeStats())
			}
			if sum != s {
				t.Fatalf("trial %d round %d: shards %+v, message %+v", trial, r, sum, s)
			}
		}
	}
	// A message of several shards, a matrix split across them by rows.
	big := mustEncoder(t, Config{RankMax: 32, FactorBits: 2, ByteBudget: 20000})
	in := []Tensor{randTensor(rng, "w", 1, 2000, 100), randTensor(rng, "b", 1, 100)}
	for r := 0; r < 2; r++ {
		m, err := big.EncodeRound(uint64(r), in)
		if err != nil {
			t.Fatal(err)
		}
		shards, err := m.ShardsOf(MinShardBytes)
		if err != nil || len(shards) < 3 {
			t.Fatalf("%d shards: %v", len(shards), err)
		}
		var sum CodeStats
		for _, sh := range shards {
			p, err := DecodeShard(sh.Data, DefaultLimits)
			if err != nil {
				t.Fatal(err)
			}
			if ref := levelsRef(p, DefaultBlockSize); p.CodeStats().Codes2 != ref {
				t.Fatalf("a shard: codes %v, reference %v", p.CodeStats().Codes2, ref)
			}
			sum.Add(p.CodeStats())
		}
		// Each shard carries Q whole (and its scales), P's rows once.
		s := m.CodeStats()
		p := m.pieces[0]
		q := p.Rank * p.Shape[1] * (len(shards) - 1)
		if s.Codes2 != levelsRef(m, DefaultBlockSize) || sum.Codes2[0]+sum.Codes2[1]+sum.Codes2[2]+sum.Codes2[3] != s.Codes2[0]+s.Codes2[1]+s.Codes2[2]+s.Codes2[3]+q ||
			sum.FactorCodeBytes != s.FactorCodeBytes+(len(shards)-1)*len(p.QCodes) || sum.DenseBytes != s.DenseBytes {
			t.Fatalf("round %d: %d shards %+v, message %+v", r, len(shards), sum, s)
		}
	}
	m := mustEncode(t, mustEncoder(t, Config{MinLowRank: 64, RankMax: 3}), fragInputs(rng, 0))
	if s := m.CodeStats(); s.Codes2 != [4]int{} || s.FactorCodeBytes == 0 {
		t.Fatalf("a 4-bit message: %+v", s)
	}
}
