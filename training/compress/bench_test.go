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
