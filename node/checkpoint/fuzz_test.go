package checkpoint_test

import (
	"crypto/sha256"
	"testing"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
	"github.com/lowband/lowband/node/checkpoint"
	"github.com/lowband/lowband/training"
	"github.com/lowband/lowband/training/round"
)

// FuzzDecodeManifest: any bytes give a manifest within its limits or an error, never a
// panic; a manifest that decodes re-encodes to the same bytes.
func FuzzDecodeManifest(f *testing.F) {
	c, _ := train(&testing.T{}, 1).checkpointOf(&testing.T{})
	m, _ := checkpoint.Split(c, checkpoint.MinChunkSize)
	f.Add(m.Marshal())
	f.Add([]byte{0xa0})
	lim := limits()
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := checkpoint.DecodeManifest(b, lim)
		if err != nil {
			return
		}
		if string(m.Marshal()) != string(b) {
			t.Fatal("a decoded manifest re-encodes differently")
		}
		if m.Size > lim.MaxSize() || len(m.Chunks) > checkpoint.MaxChunks {
			t.Fatalf("manifest beyond the limits: %d bytes, %d chunks", m.Size, len(m.Chunks))
		}
	})
}

// FuzzAssemble: any bytes as a checkpoint's encoding, under a manifest that agrees with
// them, give a checkpoint of the wanted root or an error, never a panic. The model is
// tiny, so that the seed is small and mutations reach every field.
func FuzzAssemble(f *testing.F) {
	led, err := incentives.NewState(incentives.Params{MinStake: 100, Reward: 10, JailRounds: 3, EvidenceWindow: 4},
		incentives.Genesis{Stakes: []incentives.Stake{{Peer: incentivestest.PeerID("a"), Amount: 100}}})
	if err != nil {
		f.Fatal(err)
	}
	led.Round = 1
	tiny := []training.Tensor{{Name: "w", Shape: []int{2, 2}, Data: []float64{1, 2, 3, 4}}}
	c := &checkpoint.Checkpoint{Network: testNetwork, Run: testRun, Round: 1, Ledger: led,
		Model: round.State{Round: 1, Params: tiny, Momentum: []float64{0, 0, 0, 1}}}
	root := c.Root()
	led.Head = root[:]
	f.Add(c.Encode())
	f.Add([]byte{0xa0})
	lim := checkpoint.Limits{Network: testNetwork, Run: testRun, Like: tiny}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return
		}
		m := &checkpoint.Manifest{Version: checkpoint.Version, Network: lim.Network, Run: lim.Run, Round: 1,
			Size: uint64(len(b)), ChunkSize: checkpoint.MinChunkSize}
		var chunks [][]byte
		for off := 0; off < len(b); off += checkpoint.MinChunkSize {
			ch := b[off:min(off+checkpoint.MinChunkSize, len(b))]
			chunks = append(chunks, ch)
			m.Chunks = append(m.Chunks, sha256.Sum256(ch))
		}
		want := sha256.Sum256(b)
		m.Root = want
		if got, err := checkpoint.Assemble(m, chunks, want, lim); err == nil && got.Root() != want {
			t.Fatal("assembled a checkpoint of another root")
		}
	})
}
