package checkpoint_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/lowband/lowband/node/checkpoint"
	"github.com/lowband/lowband/training"
)

// A checkpoint whose bytes do not give the root it is fetched for is refused, even when
// its manifest and chunks agree with each other and the manifest claims that root: one
// value of θ changed, the momentum changed, a ledger balance changed.
func TestCheckpointWhoseBytesDoNotMatchItsRootRefused(t *testing.T) {
	good, _ := train(t, 2).checkpointOf(t)
	want := good.Root()
	tamper := map[string]func(c *checkpoint.Checkpoint){
		"theta":    func(c *checkpoint.Checkpoint) { c.Model.Params[0].Data[5] += 1e-9 },
		"momentum": func(c *checkpoint.Checkpoint) { c.Model.Momentum[0] = -c.Model.Momentum[0] },
		"ledger":   func(c *checkpoint.Checkpoint) { c.Ledger.Accounts[0].Balance++ },
		"prev":     func(c *checkpoint.Checkpoint) { c.Prev[0] ^= 1 },
	}
	for name, f := range tamper {
		bad, _ := train(t, 2).checkpointOf(t)
		led := *bad.Ledger
		led.Accounts = slices.Clone(led.Accounts)
		bad.Ledger = &led
		f(bad)
		m, chunks := checkpoint.Split(bad, 0)
		m.Root = want // the manifest lies: its chunks are the tampered bytes
		if _, err := checkpoint.Assemble(m, chunks, want, limits()); !errors.Is(err, checkpoint.ErrRoot) {
			t.Fatalf("%s changed: %v, want ErrRoot", name, err)
		}
	}
}

// A checkpoint whose ledger head is not its root is refused, though its root is the one
// wanted (the head is not part of the ledger root the state root covers).
func TestCheckpointWithLedgerHeadNotItsRootRefused(t *testing.T) {
	c, _ := train(t, 2).checkpointOf(t)
	want := c.Root()
	led := *c.Ledger
	led.Head = append([]byte(nil), c.Ledger.Head...)
	led.Head[0] ^= 1
	c.Ledger = &led
	if c.Root() != want {
		t.Fatal("the head changed the root: the test would not cover the head check")
	}
	m, chunks := checkpoint.Split(c, 0)
	if _, err := checkpoint.Assemble(m, chunks, want, limits()); !errors.Is(err, checkpoint.ErrRoot) {
		t.Fatalf("%v, want ErrRoot", err)
	}
}

// A manifest for another root than the one wanted is refused before any chunk is read.
func TestManifestOfAnotherRootRefused(t *testing.T) {
	c, m, chunks := split(t)
	want := c.Root()
	want[0] ^= 1
	if _, err := checkpoint.Assemble(m, chunks, want, limits()); !errors.Is(err, checkpoint.ErrRoot) {
		t.Fatalf("%v, want ErrRoot", err)
	}
}

// A manifest that lies about sizes is refused: by DecodeManifest when its numbers do not
// hold together or exceed the network's bounds, by Assemble when the chunks are not as long
// as it says.
func TestManifestThatLiesAboutSizesRefused(t *testing.T) {
	c, m, chunks := split(t)
	lim := limits()
	malformed := map[string]func(m *checkpoint.Manifest){
		"size beyond the network's bound": func(m *checkpoint.Manifest) {
			m.Size = lim.MaxSize() + 1
			m.Chunks = make([][32]byte, (m.Size+uint64(m.ChunkSize)-1)/uint64(m.ChunkSize))
		},
		"fewer chunks than the size needs": func(m *checkpoint.Manifest) { m.Size += uint64(m.ChunkSize) },
		"more chunks than the size needs":  func(m *checkpoint.Manifest) { m.Chunks = append(m.Chunks, [32]byte{}) },
		"chunk size 1":                     func(m *checkpoint.Manifest) { m.ChunkSize = 1 },
		"chunk size over the bound":        func(m *checkpoint.Manifest) { m.ChunkSize = checkpoint.MaxChunkSize + 1 },
		"size 0":                           func(m *checkpoint.Manifest) { m.Size, m.Chunks = 0, nil },
		"round 0":                          func(m *checkpoint.Manifest) { m.Round = 0 },
		"another run":                      func(m *checkpoint.Manifest) { m.Run = "run-2" },
		"another version":                  func(m *checkpoint.Manifest) { m.Version = 2 },
	}
	for name, f := range malformed {
		bad := *m
		bad.Chunks = slices.Clone(m.Chunks)
		f(&bad)
		if _, err := checkpoint.DecodeManifest(bad.Marshal(), lim); !errors.Is(err, checkpoint.ErrMalformed) {
			t.Fatalf("%s: DecodeManifest: %v, want ErrMalformed", name, err)
		}
		if _, err := checkpoint.Assemble(&bad, chunks, c.Root(), lim); err == nil {
			t.Fatalf("%s: Assemble took it", name)
		}
	}
	// Consistent numbers, one byte more than the chunks hold: the last chunk is short.
	bad := *m
	bad.Size++
	var ce *checkpoint.ChunkError
	if _, err := checkpoint.Assemble(&bad, chunks, c.Root(), lim); !errors.As(err, &ce) || ce.Reason != "size" {
		t.Fatalf("size one byte too large: %v", err)
	}
}

// A manifest larger than MaxManifestSize or not in canonical encoding is refused.
func TestManifestOversizedOrNonCanonicalRefused(t *testing.T) {
	_, m, _ := split(t)
	for name, b := range map[string][]byte{
		"oversized":     make([]byte, checkpoint.MaxManifestSize+1),
		"trailing byte": append(m.Marshal(), 0),
		"empty":         nil,
	} {
		if _, err := checkpoint.DecodeManifest(b, limits()); !errors.Is(err, checkpoint.ErrMalformed) {
			t.Fatalf("%s: %v, want ErrMalformed", name, err)
		}
	}
}

// A checkpoint of another model (a tensor renamed, reshaped, one more) is refused as
// malformed, whatever root it claims.
func TestCheckpointOfAnotherModelRefused(t *testing.T) {
	cases := map[string]func(ts []training.Tensor) []training.Tensor{
		"renamed":  func(ts []training.Tensor) []training.Tensor { ts[1].Name = "c"; return ts },
		"reshaped": func(ts []training.Tensor) []training.Tensor { ts[0].Shape = []int{64, 96}; return ts },
		"extra": func(ts []training.Tensor) []training.Tensor {
			return append(ts, training.Tensor{Name: "x", Shape: []int{1}, Data: []float64{0}})
		},
	}
	for name, f := range cases {
		c, _ := train(t, 1).checkpointOf(t)
		c.Model.Params = f(c.Model.Params)
		m, chunks := checkpoint.Split(c, 0)
		if _, err := checkpoint.Assemble(m, chunks, c.Root(), limits()); !errors.Is(err, checkpoint.ErrMalformed) {
			t.Fatalf("%s: %v, want ErrMalformed", name, err)
		}
	}
}
