package checkpoint_test

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fxamacker/cbor/v2"

	"github.com/lowband/lowband/node/checkpoint"
	"github.com/lowband/lowband/training"
)

// bigCheckpoint has the default character model's size: 1.1M parameters and as much
// momentum.
func bigCheckpoint(b *testing.B) *checkpoint.Checkpoint {
	c, _ := train(&testing.T{}, 1).checkpointOf(&testing.T{})
	rng := rand.New(rand.NewPCG(1, 2))
	vals := func(n int) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = rng.NormFloat64()
		}
		return out
	}
	const n = 1_100_000
	c.Model.Params = []training.Tensor{{Name: "w", Shape: []int{n}, Data: vals(n)}}
	c.Model.Momentum = vals(n)
	led := *c.Ledger
	root := c.Root()
	led.Head = root[:]
	c.Ledger = &led
	return c
}

// BenchmarkEncode is the encoding a node makes every CheckpointEvery rounds.
func BenchmarkEncode(b *testing.B) {
	c := bigCheckpoint(b)
	b.ResetTimer()
	for b.Loop() {
		b.SetBytes(int64(len(c.Encode())))
	}
}

// BenchmarkAssemble is what a syncing node does with the chunks: check, decode, root.
func BenchmarkAssemble(b *testing.B) {
	c := bigCheckpoint(b)
	lim := checkpoint.Limits{Network: c.Network, Run: c.Run, Like: c.Model.Params}
	m, chunks := checkpoint.Split(c, 0)
	want := c.Root()
	b.ResetTimer()
	for b.Loop() {
		if _, err := checkpoint.Assemble(m, chunks, want, lim); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeFloatsAsCBORList is the alternative Encode does not take: θ and the
// momentum as CBOR lists of floats, in the canonical (shortest float) form.
func BenchmarkEncodeFloatsAsCBORList(b *testing.B) {
	c := bigCheckpoint(b)
	em, err := cbor.CoreDetEncOptions().EncMode()
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		out, err := em.Marshal([][]float64{c.Model.Params[0].Data, c.Model.Momentum})
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(out)))
	}
}

// BenchmarkDecodeFloatsAsCBORList is the decoding side of that alternative, against
// which Assemble's decoding of byte strings compares.
func BenchmarkDecodeFloatsAsCBORList(b *testing.B) {
	c := bigCheckpoint(b)
	em, err := cbor.CoreDetEncOptions().EncMode()
	if err != nil {
		b.Fatal(err)
	}
	enc, err := em.Marshal([][]float64{c.Model.Params[0].Data, c.Model.Momentum})
	if err != nil {
		b.Fatal(err)
	}
	dm, err := cbor.DecOptions{MaxArrayElements: 2_200_000}.DecMode()
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(enc)))
	b.ResetTimer()
	for b.Loop() {
		var out [][]float64
		if err := dm.Unmarshal(enc, &out); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeFloatBytes decodes the same values from Encode's byte strings, as
// Assemble does (without its hashing and root).
func BenchmarkDecodeFloatBytes(b *testing.B) {
	c := bigCheckpoint(b)
	em, err := cbor.CoreDetEncOptions().EncMode()
	if err != nil {
		b.Fatal(err)
	}
	raw := func(xs []float64) []byte {
		out := make([]byte, 8*len(xs))
		for i, x := range xs {
			binary.LittleEndian.PutUint64(out[8*i:], math.Float64bits(x))
		}
		return out
	}
	enc, err := em.Marshal([][]byte{raw(c.Model.Params[0].Data), raw(c.Model.Momentum)})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(enc)))
	b.ResetTimer()
	for b.Loop() {
		var out [][]byte
		if err := cbor.Unmarshal(enc, &out); err != nil {
			b.Fatal(err)
		}
		for _, r := range out {
			vals := make([]float64, len(r)/8)
			for i := range vals {
				vals[i] = math.Float64frombits(binary.LittleEndian.Uint64(r[8*i:]))
			}
		}
	}
}
