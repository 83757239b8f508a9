package checkpoint

import (
	"bytes"
	"crypto/sha256"
	"fmt"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/training"
)

// Chunk and manifest bounds. A chunk is one answer of the fetch protocol.
const (
	// DefaultChunkSize is the chunk size Split uses when given 0.
	DefaultChunkSize = 256 << 10
	// MinChunkSize and MaxChunkSize bound a manifest's chunk size.
	MinChunkSize = 16 << 10
	MaxChunkSize = 512 << 10
	// MaxChunks bounds a manifest's chunk count.
	MaxChunks = 8192
	// MaxManifestSize bounds an encoded manifest: MaxChunks hashes and the other fields.
	MaxManifestSize = MaxChunks*(32+2) + 1024
)

// Limits are what a network allows a checkpoint to be: its names and θ_0's tensors.
type Limits struct {
	Network, Run string
	// Like is θ_0 (round.State.Params of round 0): the names, shapes and order of the
	// tensors a checkpoint must hold; its values are not used, and may be left out (nil
	// Data): a tensor holds as many values as its shape gives.
	Like []training.Tensor
}

// MaxSize bounds a checkpoint's encoding under l: θ and the momentum at 8 bytes a value
// with their framing, the ledger at incentives.MaxStateSize, and the other fields.
func (l Limits) MaxSize() uint64 {
	n := uint64(1024 + len(l.Network) + len(l.Run) + incentives.MaxStateSize + 9)
	var values uint64
	for _, t := range l.Like {
		n += 16 + uint64(len(t.Name)) + 9*uint64(len(t.Shape)) + 9
		values += uint64(likeLen(t))
	}
	return n + 16*values + 9
}

// Manifest names a checkpoint's encoding and its chunks. Its ID is what the DHT announces.
type Manifest struct {
	Version   uint8      `cbor:"1,keyasint"`
	Network   string     `cbor:"2,keyasint"`
	Run       string     `cbor:"3,keyasint"`
	Round     uint64     `cbor:"4,keyasint"`
	Root      [32]byte   `cbor:"5,keyasint"` // the checkpoint's Root
	Size      uint64     `cbor:"6,keyasint"` // bytes of the encoding
	ChunkSize uint32     `cbor:"7,keyasint"` // every chunk but the last is this long
	Chunks    [][32]byte `cbor:"8,keyasint"` // SHA-256 of each chunk, in order
}

// Split encodes c and cuts the encoding into chunks of chunkSize bytes (0:
// DefaultChunkSize), the last one shorter. The chunks share the encoding's memory.
func Split(c *Checkpoint, chunkSize int) (*Manifest, [][]byte) {
	if chunkSize <= 0 {
		chunkSize = DefaultChunkSize
	}
	enc := c.Encode()
	m := &Manifest{Version: Version, Network: c.Network, Run: c.Run, Round: c.Round, Root: c.Root(),
		Size: uint64(len(enc)), ChunkSize: uint32(chunkSize)}
	var chunks [][]byte
	for off := 0; off < len(enc); off += chunkSize {
		ch := enc[off:min(off+chunkSize, len(enc))]
		chunks = append(chunks, ch)
		m.Chunks = append(m.Chunks, sha256.Sum256(ch))
	}
	return m, chunks
}

// Marshal returns the manifest's canonical encoding.
func (m *Manifest) Marshal() []byte { return marshal(m) }

// ID is the SHA-256 of the manifest's canonical encoding: the key the DHT announces and the
// fetch protocol asks for.
func (m *Manifest) ID() [32]byte { return sha256.Sum256(m.Marshal()) }

// DecodeManifest decodes a peer's manifest: its size before anything else, then canonical
// form, version, network and run, and sizes within lim (ErrMalformed).
func DecodeManifest(b []byte, lim Limits) (*Manifest, error) {
	if len(b) > MaxManifestSize {
		return nil, fmt.Errorf("%w: manifest of %d bytes, limit %d", ErrMalformed, len(b), MaxManifestSize)
	}
	var m Manifest
	if err := decodeCanonical(b, &m); err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	if err := m.check(lim); err != nil {
		return nil, err
	}
	return &m, nil
}

// check checks the manifest's fields against lim: the chunk count must follow from the
// size and the chunk size, and the size must be one a checkpoint of this network can have.
func (m *Manifest) check(lim Limits) error {
	switch {
	case m.Version != Version:
		return fmt.Errorf("%w: manifest version %d, this build reads %d", ErrMalformed, m.Version, Version)
	case m.Network != lim.Network || m.Run != lim.Run:
		return fmt.Errorf("%w: manifest of %q/%q, want %q/%q", ErrMalformed, m.Network, m.Run, lim.Network, lim.Run)
	case m.Round == 0:
		return fmt.Errorf("%w: manifest of round 0", ErrMalformed)
	case m.ChunkSize < MinChunkSize || m.ChunkSize > MaxChunkSize:
		return fmt.Errorf("%w: chunk size %d, want %d-%d", ErrMalformed, m.ChunkSize, MinChunkSize, MaxChunkSize)
	case m.Size == 0 || m.Size > lim.MaxSize():
		return fmt.Errorf("%w: size %d, limit %d", ErrMalformed, m.Size, lim.MaxSize())
	}
	if want := (m.Size + uint64(m.ChunkSize) - 1) / uint64(m.ChunkSize); uint64(len(m.Chunks)) != want {
		return fmt.Errorf("%w: %d chunks for %d bytes in chunks of %d (want %d)", ErrMalformed, len(m.Chunks), m.Size, m.ChunkSize, want)
	}
	return nil
}

// ChunkSizeOf is the size chunk i must have.
func (m *Manifest) ChunkSizeOf(i int) int {
	if i == len(m.Chunks)-1 {
		return int(m.Size - uint64(i)*uint64(m.ChunkSize))
	}
	return int(m.ChunkSize)
}

// ChunkError is a chunk that does not match the manifest. It wraps ErrChunk.
type ChunkError struct {
	Index  int
	Reason string // "missing", "extra", "size", "hash"
}

func (e *ChunkError) Error() string {
	return fmt.Sprintf("%v: chunk %d: %s", ErrChunk, e.Index, e.Reason)
}

func (e *ChunkError) Unwrap() error { return ErrChunk }

// CheckChunk checks chunk i against the manifest: its size, then its hash.
func (m *Manifest) CheckChunk(i int, chunk []byte) error {
	switch {
	case i < 0 || i >= len(m.Chunks):
		return &ChunkError{Index: i, Reason: "extra"}
	case len(chunk) != m.ChunkSizeOf(i):
		return &ChunkError{Index: i, Reason: "size"}
	case sha256.Sum256(chunk) != m.Chunks[i]:
		return &ChunkError{Index: i, Reason: "hash"}
	}
	return nil
}

// Assemble checks m against lim and want, every chunk against m (hash and size), decodes
// the checkpoint with lim (tensor names and shapes of θ_0, the ledger's bounds), and refuses
// it unless its Root() equals want and its ledger's head is that root. Nothing is
// allocated for the whole before every chunk has been checked.
func Assemble(m *Manifest, chunks [][]byte, want [32]byte, lim Limits) (*Checkpoint, error) {
	if err := m.check(lim); err != nil {
		return nil, err
	}
	if m.Root != want {
		return nil, fmt.Errorf("%w: manifest names root %x, want %x", ErrRoot, m.Root[:8], want[:8])
	}
	if len(chunks) < len(m.Chunks) {
		return nil, &ChunkError{Index: len(chunks), Reason: "missing"}
	}
	if len(chunks) > len(m.Chunks) {
		return nil, &ChunkError{Index: len(m.Chunks), Reason: "extra"}
	}
	for i, ch := range chunks {
		if err := m.CheckChunk(i, ch); err != nil {
			return nil, err
		}
	}
	enc := make([]byte, 0, m.Size)
	for _, ch := range chunks {
		enc = append(enc, ch...)
	}
	c, err := decode(enc, lim)
	if err != nil {
		return nil, err
	}
	if c.Round != m.Round {
		return nil, fmt.Errorf("%w: checkpoint of round %d under a manifest of round %d", ErrMalformed, c.Round, m.Round)
	}
	if got := c.Root(); got != want || !bytes.Equal(c.Ledger.Head, got[:]) {
		return nil, fmt.Errorf("%w: checkpoint's root %x (ledger head %x), want %x", ErrRoot, got[:8], c.Ledger.Head[:min(8, len(c.Ledger.Head))], want[:8])
	}
	return c, nil
}

// likeLen is how many values a tensor of Limits.Like holds: the product of its shape.
func likeLen(t training.Tensor) int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}
