package checkpoint_test

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/lowband/lowband/node/checkpoint"
)

// The root of a checkpoint made from a Core after it closed round r is the NewRoot of the
// record of round r that the Core built, and the ledger's head.
func TestRootIsTheNewRootOfTheRecordBefore(t *testing.T) {
	tr := train(t, 3)
	c, last := tr.checkpointOf(t)
	if len(c.Model.Momentum) == 0 {
		t.Fatal("no momentum after three closes with momentum 0.5: the test would not cover it")
	}
	root := c.Root()
	if !bytes.Equal(root[:], last.Record.NewRoot) {
		t.Fatalf("checkpoint root %x, record %d's NewRoot %x", root, last.Record.Round, last.Record.NewRoot)
	}
	if !bytes.Equal(root[:], c.Ledger.Head) {
		t.Fatalf("checkpoint root %x, ledger head %x", root, c.Ledger.Head)
	}
}

// A checkpoint split into chunks and assembled again is the same checkpoint: same
// encoding, root, θ bits and momentum, ledger bytes.
func TestSplitAssembleRoundTrip(t *testing.T) {
	tr := train(t, 2)
	c, _ := tr.checkpointOf(t)
	m, chunks := checkpoint.Split(c, checkpoint.MinChunkSize)
	if len(chunks) < 2 {
		t.Fatalf("%d chunks: the test needs several", len(chunks))
	}
	m2, err := checkpoint.DecodeManifest(m.Marshal(), limits())
	if err != nil {
		t.Fatal(err)
	}
	if m2.ID() != m.ID() {
		t.Fatal("the manifest's ID changed through its encoding")
	}
	got, err := checkpoint.Assemble(m2, chunks, c.Root(), limits())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Encode(), c.Encode()) || got.Root() != c.Root() || !got.Ledger.Equal(c.Ledger) {
		t.Fatal("the assembled checkpoint differs")
	}
	if got.Model.Root() != c.Model.Root() || !slices.Equal(got.Model.Momentum, c.Model.Momentum) {
		t.Fatal("θ or momentum differ")
	}
}

// Encode is deterministic: two encodings of the same state are the same bytes.
func TestEncodeDeterministic(t *testing.T) {
	tr := train(t, 1)
	c, _ := tr.checkpointOf(t)
	a, b := c.Encode(), c.Encode()
	if !bytes.Equal(a, b) {
		t.Fatal("two encodings differ")
	}
	c2, _ := tr.checkpointOf(t)
	if !bytes.Equal(c2.Encode(), a) {
		t.Fatal("a second copy of the state encodes differently")
	}
}

// split returns a checkpoint, its manifest and chunks, for the tests that break them.
func split(t *testing.T) (*checkpoint.Checkpoint, *checkpoint.Manifest, [][]byte) {
	t.Helper()
	c, _ := train(t, 2).checkpointOf(t)
	m, chunks := checkpoint.Split(c, checkpoint.MinChunkSize)
	own := make([][]byte, len(chunks))
	for i, ch := range chunks {
		own[i] = slices.Clone(ch)
	}
	return c, m, own
}

// One flipped byte in any chunk is refused as that chunk's hash.
func TestFlippedByteInAnyChunkRefused(t *testing.T) {
	c, m, chunks := split(t)
	for i := range chunks {
		for _, at := range []int{0, len(chunks[i]) / 2, len(chunks[i]) - 1} {
			bad := slices.Clone(chunks)
			bad[i] = slices.Clone(chunks[i])
			bad[i][at] ^= 1
			_, err := checkpoint.Assemble(m, bad, c.Root(), limits())
			var ce *checkpoint.ChunkError
			if !errors.As(err, &ce) || ce.Index != i || ce.Reason != "hash" || !errors.Is(err, checkpoint.ErrChunk) {
				t.Fatalf("chunk %d byte %d flipped: %v", i, at, err)
			}
		}
	}
}

// A chunk missing, one extra, one too long or too short: each refused, naming the chunk.
func TestChunksMissingExtraOrMisSizedRefused(t *testing.T) {
	c, m, chunks := split(t)
	last := len(chunks) - 1
	cases := []struct {
		name   string
		chunks [][]byte
		index  int
		reason string
	}{
		{"missing", chunks[:last], last, "missing"},
		{"extra", append(slices.Clone(chunks), []byte("more")), last + 1, "extra"},
		{"too long", replace(chunks, 0, append(slices.Clone(chunks[0]), 0)), 0, "size"},
		{"last too long", replace(chunks, last, append(slices.Clone(chunks[last]), 0)), last, "size"},
		{"too short", replace(chunks, 1, chunks[1][:len(chunks[1])-1]), 1, "size"},
	}
	for _, tc := range cases {
		_, err := checkpoint.Assemble(m, tc.chunks, c.Root(), limits())
		var ce *checkpoint.ChunkError
		if !errors.As(err, &ce) || ce.Index != tc.index || ce.Reason != tc.reason {
			t.Fatalf("%s: %v, want chunk %d %s", tc.name, err, tc.index, tc.reason)
		}
	}
}

func replace(chunks [][]byte, i int, ch []byte) [][]byte {
	out := slices.Clone(chunks)
	out[i] = ch
	return out
}
