package checkpoint

import (
	"bytes"
	"runtime"
	"testing"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/training"
	"github.com/lowband/lowband/training/round"
)

// sizedCheckpoint is a checkpoint of n parameters in two tensors, with momentum and a
// ledger, every value distinct.
func sizedCheckpoint(t *testing.T, n int) *Checkpoint {
	t.Helper()
	vals := func(k int, s float64) []float64 {
		out := make([]float64, k)
		for i := range out {
			out[i] = float64(i)*s - 1e3
		}
		return out
	}
	led, err := incentives.NewState(incentives.Params{MinStake: 1, Reward: 1, JailRounds: 1, EvidenceWindow: 1}, incentives.Genesis{})
	if err != nil {
		t.Fatal(err)
	}
	led.Round = 3
	return &Checkpoint{Network: "net", Run: "run", Round: 3, Prev: [32]byte{9}, Ledger: led, Model: round.State{
		Round: 3, Momentum: vals(n, 0.25),
		Params: []training.Tensor{{Name: "w", Shape: []int{n / 4, 3}, Data: vals(n/4*3, 0.5)}, {Name: "b", Shape: []int{n / 4}, Data: vals(n/4, 0.75)}},
	}}
}

// TestEncodeIsTheCanonicalEncodingAllocatedOnce: Encode gives the canonical CBOR encoding
// of the checkpoint's wire form (the bytes every node hashes, as the cbor library encodes
// it), and allocates about its size once: the encoding, written into a buffer of its size
// (no copy of the values' bytes, no buffer grown by doubling).
func TestEncodeIsTheCanonicalEncodingAllocatedOnce(t *testing.T) {
	for _, c := range []*Checkpoint{sizedCheckpoint(t, 1<<20), sizedCheckpoint(t, 8), {Network: "n", Run: "r", Round: 1}} {
		w := c.wire()
		want, err := encMode.Marshal(&w)
		if err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		got := c.Encode()
		runtime.ReadMemStats(&after)
		if !bytes.Equal(got, want) {
			t.Fatalf("Encode of %d bytes is not the canonical encoding of %d", len(got), len(want))
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(len(got))+128<<10 {
			t.Errorf("encoding %d bytes allocated %d", len(got), alloc)
		}
	}
}
