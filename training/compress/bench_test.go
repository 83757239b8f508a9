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

// BenchmarkRoundCharLM1000xShared is BenchmarkRoundCharLM1000x with shared bases
// (SharedRank 16): deriving the round's bases from an aggregate of four workers'
// contributions, encoding on them, then decoding four contributions bound to them.
func BenchmarkRoundCharLM1000xShared(b *testing.B) {
	rng := newRand(18)
	shapes := map[string][]int{"l0.w": {1024, 768}, "l0.b": {768}, "l1.w": {768, 768}, "l1.b": {768}, "l2.w": {768, 93}, "l2.b": {93}}
	names := []string{"l0.w", "l0.b", "l1.w", "l1.b", "l2.w", "l2.b"}
	round := func() []Tensor {
		ts := make([]Tensor, len(names))
		for i, n := range names {
			ts[i] = randTensor(rng, n, 1e-3, shapes[n]...)
		}
		return ts
	}
	cfg := Config{RankMin: 1, RankMax: 128, PowerIters: 2, FactorBits: 2, DenseBits: 4, FeedbackDecay: 0.95,
		ByteBudget: RatioBudget(shapes, 1000), SharedRank: 16}
	// The aggregate: the mean of four workers' decoded first messages.
	agg := round()
	for _, t := range agg {
		clear(t.Data)
	}
	for range 4 {
		e := mustEncoder(b, cfg)
		dec, err := mustEncode(b, e, round()).Decode()
		if err != nil {
			b.Fatal(err)
		}
		for i, t := range dec {
			for j, v := range t.Data {
				agg[i].Data[j] += v / 4
			}
		}
	}
	e := mustEncoder(b, cfg)
	ts := round()
	dst := clone(ts)
	for b.Loop() {
		bases, err := DeriveBases(e.Config(), agg)
		if err != nil {
			b.Fatal(err)
		}
		m, err := e.EncodeRoundShared(0, ts, bases)
		if err != nil {
			b.Fatal(err)
		}
		if m, err = m.WithBases(bases); err != nil {
			b.Fatal(err)
		}
		for range 4 {
			if err := m.DecodeInto(dst); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkDeriveBasesCharLM is DeriveBases alone on charlm's matrices at SharedRank 16.
func BenchmarkDeriveBasesCharLM(b *testing.B) {
	rng := newRand(19)
	agg := []Tensor{rankK(rng, "l0.w", 1024, 768, 20), rankK(rng, "l1.w", 768, 768, 20), rankK(rng, "l2.w", 768, 93, 20)}
	cfg := Config{MinLowRank: 1024, SharedRank: 16}
	if err := cfg.Validate(); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := DeriveBases(cfg, agg); err != nil {
			b.Fatal(err)
		}
	}
}
