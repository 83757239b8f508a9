package checkpoint

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/fxamacker/cbor/v2"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/training"
	"github.com/lowband/lowband/training/round"
)

// Version is the checkpoint and manifest format this package reads and writes.
const Version = 1

// Errors of DecodeManifest and Assemble (wrapped with detail; test with errors.Is).
var (
	// ErrMalformed: bytes that are not a canonical manifest or checkpoint of this network,
	// or that break its limits (sizes, tensor names and shapes of θ_0).
	ErrMalformed = errors.New("checkpoint: malformed")
	// ErrChunk: a chunk missing, extra, of the wrong size or hash (see ChunkError).
	ErrChunk = errors.New("checkpoint: chunk does not match the manifest")
	// ErrRoot: a checkpoint whose root is not the one wanted, or whose ledger head is not
	// its own root.
	ErrRoot = errors.New("checkpoint: root does not match")
)

// Checkpoint is the global state at the start of round Round.
type Checkpoint struct {
	Network, Run string
	Round        uint64            // first open round: the state after closing Round-1 (at least 1)
	Prev         [32]byte          // the state root of round Round-2: record Round-1's PrevRoot
	Model        round.State       // θ and outer momentum, Model.Round == Round
	Ledger       *incentives.State // Ledger.Round == Round, Ledger.Head == Root()
}

// Root is the state root the checkpoint claims: StateRoot(Round-1, Model.Root(), the
// ledger's root with its head set back to Prev), which is how the ledger computes the
// NewRoot of record Round-1. It is zero for Round 0, which no checkpoint has.
func (c *Checkpoint) Root() [32]byte {
	if c.Round == 0 || c.Ledger == nil {
		return [32]byte{}
	}
	led := *c.Ledger // shallow: Root only encodes it
	led.Head = c.Prev[:]
	mr := c.Model.Root()
	return incentives.StateRoot(c.Round-1, mr[:], led.Root())
}

// wireCheckpoint is the encoding: canonical CBOR, the bulk values as byte strings of
// IEEE-754 bits, 8 bytes little endian each (CBOR floats would cost a type byte each and
// take their shortest form, value by value).
type wireCheckpoint struct {
	Version  uint8        `cbor:"1,keyasint"`
	Network  string       `cbor:"2,keyasint"`
	Run      string       `cbor:"3,keyasint"`
	Round    uint64       `cbor:"4,keyasint"`
	Prev     []byte       `cbor:"5,keyasint"`
	Tensors  []wireTensor `cbor:"6,keyasint"`
	Momentum []byte       `cbor:"7,keyasint"` // empty: no outer momentum yet
	Ledger   []byte       `cbor:"8,keyasint"` // incentives.State, its canonical encoding
}

type wireTensor struct {
	Name  string   `cbor:"1,keyasint"`
	Shape []uint64 `cbor:"2,keyasint"`
	Data  []byte   `cbor:"3,keyasint"`
}

// Encode returns the checkpoint's canonical encoding: the same state gives the same bytes
// on every node and architecture. It is written (WriteTo) into a buffer of its size.
func (c *Checkpoint) Encode() []byte {
	ledger := c.ledgerBytes()
	n := 16*9 + len(c.Network) + len(c.Run) + len(c.Prev) + 8*len(c.Model.Momentum) + len(ledger)
	for _, t := range c.Model.Params {
		n += 8*9 + len(t.Name) + 9*len(t.Shape) + 8*len(t.Data)
	}
	buf := bytes.NewBuffer(make([]byte, 0, n))
	_, _ = c.writeTo(buf, ledger, min(n, streamBuf)) // a bytes.Buffer takes every write
	return buf.Bytes()
}

// wire is the checkpoint's wire form.
func (c *Checkpoint) wire() wireCheckpoint {
	w := wireCheckpoint{
		Version: Version, Network: c.Network, Run: c.Run, Round: c.Round, Prev: c.Prev[:],
		Momentum: floatBytes(c.Model.Momentum),
	}
	if c.Ledger != nil {
		w.Ledger = c.Ledger.Marshal()
	}
	for _, t := range c.Model.Params {
		shape := make([]uint64, len(t.Shape))
		for i, d := range t.Shape {
			shape[i] = uint64(int64(d))
		}
		w.Tensors = append(w.Tensors, wireTensor{Name: t.Name, Shape: shape, Data: floatBytes(t.Data)})
	}
	return w
}

// decode decodes a checkpoint's encoding against lim: canonical form, version, network
// and run, tensors named and shaped as θ_0, value counts, the ledger within its bounds and
// at the checkpoint's round.
func decode(b []byte, lim Limits) (*Checkpoint, error) {
	if uint64(len(b)) > lim.MaxSize() {
		return nil, fmt.Errorf("%w: checkpoint of %d bytes, limit %d", ErrMalformed, len(b), lim.MaxSize())
	}
	var w wireCheckpoint
	if err := decodeCanonical(b, &w); err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	switch {
	case w.Version != Version:
		return nil, fmt.Errorf("%w: checkpoint version %d, this build reads %d", ErrMalformed, w.Version, Version)
	case w.Network != lim.Network || w.Run != lim.Run:
		return nil, fmt.Errorf("%w: checkpoint of %q/%q, want %q/%q", ErrMalformed, w.Network, w.Run, lim.Network, lim.Run)
	case w.Round == 0:
		return nil, fmt.Errorf("%w: checkpoint of round 0", ErrMalformed)
	case len(w.Prev) != 32:
		return nil, fmt.Errorf("%w: previous root of %d bytes", ErrMalformed, len(w.Prev))
	}
	c := &Checkpoint{Network: w.Network, Run: w.Run, Round: w.Round, Prev: [32]byte(w.Prev)}
	var err error
	if c.Model, err = decodeModel(&w, lim.Like); err != nil {
		return nil, err
	}
	if c.Ledger, err = incentives.DecodeState(w.Ledger); err != nil {
		return nil, fmt.Errorf("%w: ledger: %v", ErrMalformed, err)
	}
	if c.Ledger.Round != c.Round {
		return nil, fmt.Errorf("%w: ledger at round %d, checkpoint of round %d", ErrMalformed, c.Ledger.Round, c.Round)
	}
	return c, nil
}

// decodeModel checks the tensors against like (names, shapes, sizes, in order) and the
// momentum's size, then converts the values.
func decodeModel(w *wireCheckpoint, like []training.Tensor) (round.State, error) {
	if len(w.Tensors) != len(like) {
		return round.State{}, fmt.Errorf("%w: %d tensors, the model has %d", ErrMalformed, len(w.Tensors), len(like))
	}
	st := round.State{Round: w.Round, Params: make([]training.Tensor, len(like))}
	n := 0
	for i, t := range w.Tensors {
		l := like[i]
		if t.Name != l.Name || !sameShape(t.Shape, l.Shape) || len(t.Data) != 8*likeLen(l) {
			return round.State{}, fmt.Errorf("%w: tensor %d is %q %v (%d bytes), the model's is %q %v (%d values)",
				ErrMalformed, i, t.Name, t.Shape, len(t.Data), l.Name, l.Shape, likeLen(l))
		}
		st.Params[i] = training.Tensor{Name: l.Name, Shape: append([]int(nil), l.Shape...), Data: bytesFloats(t.Data)}
		n += likeLen(l)
	}
	switch len(w.Momentum) {
	case 0:
	case 8 * n:
		st.Momentum = bytesFloats(w.Momentum)
	default:
		return round.State{}, fmt.Errorf("%w: momentum of %d bytes, the model has %d values", ErrMalformed, len(w.Momentum), n)
	}
	return st, nil
}

func sameShape(got []uint64, want []int) bool {
	if len(got) != len(want) {
		return false
	}
	for i, d := range want {
		if got[i] != uint64(int64(d)) {
			return false
		}
	}
	return true
}

// floatBytes writes the IEEE-754 bits of xs, 8 bytes little endian each.
func floatBytes(xs []float64) []byte {
	out := make([]byte, 8*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint64(out[8*i:], math.Float64bits(x))
	}
	return out
}

// bytesFloats reads what floatBytes wrote; len(b) is a multiple of 8.
func bytesFloats(b []byte) []float64 {
	out := make([]float64, len(b)/8)
	for i := range out {
		out[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return out
}

var (
	encMode = func() cbor.UserBufferEncMode {
		m, err := cbor.CoreDetEncOptions().UserBufferEncMode()
		if err != nil {
			panic(err) // static options; cannot fail
		}
		return m
	}()
	// decMode decodes peer input. No list of a manifest or checkpoint is longer than
	// MaxChunks; byte strings are bounded by the input, whose size is checked first.
	decMode = func() cbor.DecMode {
		m, err := cbor.DecOptions{
			DupMapKey:         cbor.DupMapKeyEnforcedAPF,
			IndefLength:       cbor.IndefLengthForbidden,
			TagsMd:            cbor.TagsForbidden,
			MaxNestedLevels:   8,
			MaxArrayElements:  MaxChunks,
			MaxMapPairs:       16,
			ExtraReturnErrors: cbor.ExtraDecErrorUnknownField,
		}.DecMode()
		if err != nil {
			panic(err) // static options; cannot fail
		}
		return m
	}()
)

// marshal encodes v canonically; the package's types hold plain values only, for which
// encoding cannot fail.
func marshal(v any) []byte {
	b, err := encMode.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("checkpoint: encoding %T: %v", v, err))
	}
	return b
}

// decodeCanonical decodes b into v and refuses it unless it is the canonical encoding of
// what it decodes to, so that one value has one encoding and one hash.
func decodeCanonical(b []byte, v any) error {
	if err := decMode.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if again, err := encMode.Marshal(v); err != nil || !bytes.Equal(again, b) {
		return fmt.Errorf("%w: not in canonical encoding", ErrMalformed)
	}
	return nil
}
