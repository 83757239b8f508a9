package compress

import "testing"

// The 512×512 benchmarks quote the codec's cost per matrix at rank 8 (int4, block 64).

func bench512(b *testing.B) (*Encoder, []Tensor) {
	rng := newRand(15)
	e := mustEncoder(b, Config{RankMin: 8, RankMax: 8})
	return e, []Tensor{randTensor(rng, "w", 1, 512, 512)}
}

func BenchmarkEncode512(b *testing.B) {
	e, ts := bench512(b)
	b.SetBytes(512 * 512 * 4)
	for b.Loop() {
		mustEncode(b, e, ts)
	}
}

func BenchmarkDecode512(b *testing.B) {
	e, ts := bench512(b)
	m := mustEncode(b, e, ts)
	b.SetBytes(512 * 512 * 4)
	for b.Loop() {
		mustDecode(b, m)
	}
}

func BenchmarkShardsJoin512(b *testing.B) {
	e, ts := bench512(b)
	m := mustEncode(b, e, ts)
	for b.Loop() {
		shards, err := m.Shards()
		if err != nil {
			b.Fatal(err)
		}
		parts := make([]*Message, len(shards))
		for i, s := range shards {
			if parts[i], err = DecodeShard(s.Data, DefaultLimits); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := Join(parts); err != nil {
			b.Fatal(err)
		}
	}
}
