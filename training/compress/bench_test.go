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

// BenchmarkEncode1024Bias is the realistic case quoted in reports: a 1024×1024 weight matrix
// and its 1024 bias at rank 8 (int4 factors, int8 bias). It reports the encoded bytes and the
// ratio against dense fp32 (4 bytes per element).
func BenchmarkEncode1024Bias(b *testing.B) {
	rng := newRand(16)
	e := mustEncoder(b, Config{RankMin: 8, RankMax: 8})
	ts := []Tensor{randTensor(rng, "w", 1, 1024, 1024), randTensor(rng, "b", 1, 1024)}
	var size int
	for b.Loop() {
		size = len(mustBytes(b, mustEncode(b, e, ts)))
	}
	b.ReportMetric(float64(size), "bytes")
	b.ReportMetric(float64((1024*1024+1024)*4)/float64(size), "ratio_vs_fp32")
}

func BenchmarkDecode1024Bias(b *testing.B) {
	rng := newRand(16)
	e := mustEncoder(b, Config{RankMin: 8, RankMax: 8})
	m := mustEncode(b, e, []Tensor{randTensor(rng, "w", 1, 1024, 1024), randTensor(rng, "b", 1, 1024)})
	data := mustBytes(b, m)
	for b.Loop() {
		d, err := DecodeShard(data, DefaultLimits)
		if err != nil {
			b.Fatal(err)
		}
		mustDecode(b, d)
	}
}

// BenchmarkCheck1024x768 is a receiver's content check (Message.Check) of charlm's largest
// matrix at rank 2, the rank a 1000x budget leaves it.
func BenchmarkCheck1024x768(b *testing.B) {
	rng := newRand(17)
	e := mustEncoder(b, Config{RankMin: 2, RankMax: 2})
	m := mustEncode(b, e, []Tensor{randTensor(rng, "w", 1, 1024, 768), randTensor(rng, "b", 1, 768)})
	shapes := map[string][]int{"w": {1024, 768}, "b": {768}}
	for b.Loop() {
		if err := m.Check(shapes, 1e9); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRoundCharLM1000x is one worker's codec work in a round of `bench train` on
// charlm at a 1000x budget with the spec's codec (2-bit factors, two power iterations,
// int4 dense tensors, decayed feedback): encoding its pseudo-gradient, then decoding four
// contributions into the model's tensors.
func BenchmarkRoundCharLM1000x(b *testing.B) {
	rng := newRand(18)
	ts := []Tensor{randTensor(rng, "l0.w", 1e-3, 1024, 768), randTensor(rng, "l0.b", 1e-3, 768),
		randTensor(rng, "l1.w", 1e-3, 768, 768), randTensor(rng, "l1.b", 1e-3, 768),
		randTensor(rng, "l2.w", 1e-3, 768, 93), randTensor(rng, "l2.b", 1e-3, 93)}
	shapes := map[string][]int{}
	for _, t := range ts {
		shapes[t.Name] = t.Shape
	}
	e := mustEncoder(b, Config{RankMin: 1, RankMax: 128, PowerIters: 2, FactorBits: 2, DenseBits: 4, FeedbackDecay: 0.95,
		ByteBudget: RatioBudget(shapes, 1000)})
	dst := clone(ts)
	for b.Loop() {
		m := mustEncode(b, e, ts)
		for range 4 {
			if err := m.DecodeInto(dst); err != nil {
				b.Fatal(err)
			}
		}
	}
}
