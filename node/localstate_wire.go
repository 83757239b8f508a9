package node

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/lowband/lowband/training"
	"github.com/lowband/lowband/training/compress"
	"github.com/lowband/lowband/training/round"
)

// The local state's encoding: a canonical CBOR header with every field but the float
// vectors, whose lengths it lists, followed by the vectors' values, 8 bytes of IEEE-754
// bits each, little endian, in the order of the list. The bulk is written once, into a
// buffer of its exact size: a save holds the state and its encoding, no growing buffer or
// second copy (CBOR floats would also cost a type byte a value).

// localHeader is the encoding's header. Vecs lists the length of each float vector in the
// order vectors walks them; -1 is a nil vector.
type localHeader struct {
	Version  uint8         `cbor:"1,keyasint"`
	Round    uint64        `cbor:"2,keyasint"`
	Steps    uint64        `cbor:"3,keyasint"`
	Drawn    uint64        `cbor:"4,keyasint"`
	OwnRound uint64        `cbor:"5,keyasint"`
	Share    float64       `cbor:"6,keyasint"`
	Codec    []localTensor `cbor:"7,keyasint"`
	OptT     int           `cbor:"8,keyasint"`
	Moments  int           `cbor:"9,keyasint"` // parameters with AdamW moments
	Vecs     []int64       `cbor:"10,keyasint"`
}

// localTensor is a codec tensor's state without its vectors.
type localTensor struct {
	Name         string  `cbor:"1,keyasint"`
	Shape        []int   `cbor:"2,keyasint"`
	Captured     float64 `cbor:"3,keyasint"`
	ResidualNorm float64 `cbor:"4,keyasint"`
	LowRank      bool    `cbor:"5,keyasint"`
	Rank         int     `cbor:"6,keyasint"`
	LastRank     int     `cbor:"7,keyasint"`
	Energy       float64 `cbor:"8,keyasint"`
	Rand         []byte  `cbor:"9,keyasint"`
}

// maxLocalTensors bounds the codec tensors and the optimizer's parameters of a local state.
const maxLocalTensors = 1 << 12

// vectors calls f with a pointer to each float vector of ls, in the encoding's order:
// each codec tensor's residual, Q and gains, the own pseudo-gradient, the first moments,
// the second moments.
func (ls *localState) vectors(f func(*[]float64)) {
	for i := range ls.Machine.Codec.Tensors {
		t := &ls.Machine.Codec.Tensors[i]
		f(&t.Residual)
		f(&t.Q)
		f(&t.Gains)
	}
	f(&ls.Machine.Own)
	for i := range ls.Optimizer.M {
		f(&ls.Optimizer.M[i])
	}
	for i := range ls.Optimizer.V {
		f(&ls.Optimizer.V[i])
	}
}

// header is ls's header, with the lengths of its vectors, and the bytes they take.
func (ls *localState) header() (localHeader, int) {
	m := &ls.Machine
	h := localHeader{
		Version: localVersion, Round: ls.Round, Steps: ls.Steps, Drawn: ls.Drawn,
		OwnRound: m.OwnRound, Share: m.Share, OptT: ls.Optimizer.T, Moments: len(ls.Optimizer.M) + len(ls.m32),
	}
	for _, t := range m.Codec.Tensors {
		h.Codec = append(h.Codec, localTensor{
			Name: t.Name, Shape: t.Shape, Captured: t.Captured, ResidualNorm: t.ResidualNorm,
			LowRank: t.LowRank, Rank: t.Rank, LastRank: t.LastRank, Energy: t.Energy, Rand: t.Rand,
		})
	}
	size := 0
	ls.vectors(func(v *[]float64) {
		n := int64(len(*v))
		if *v == nil {
			n = -1
		}
		h.Vecs = append(h.Vecs, n)
		size += 8 * len(*v)
	})
	for _, v := range append(slices.Clone(ls.m32), ls.v32...) {
		h.Vecs = append(h.Vecs, int64(len(v)))
		size += 8 * len(v)
	}
	return h, size
}

// marshal is the local state's canonical encoding.
func (ls *localState) marshal() ([]byte, error) {
	var buf *bytes.Buffer
	if _, err := ls.writeTo(func(size int) io.Writer {
		buf = bytes.NewBuffer(make([]byte, 0, size))
		return buf
	}); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeTo writes ls's encoding (marshal's bytes) a piece at a time to the writer open
// gives for the encoding's size, reading the vectors in place: a save holds no copy of the
// state's size. It returns the bytes written.
func (ls *localState) writeTo(open func(size int) io.Writer) (int64, error) {
	if len(ls.Optimizer.M) != len(ls.Optimizer.V) || len(ls.m32) != len(ls.v32) || ls.Optimizer.M != nil && ls.m32 != nil {
		return 0, fmt.Errorf("local state: %d and %d first moments, %d and %d second", len(ls.Optimizer.M), len(ls.m32), len(ls.Optimizer.V), len(ls.v32))
	}
	h, size := ls.header()
	head, err := localEnc.Marshal(&h)
	if err != nil {
		return 0, err
	}
	cw := &countWriter{w: open(len(head) + size)}
	bw := bufio.NewWriterSize(cw, min(len(head)+size, localBuf))
	_, _ = bw.Write(head)
	put := func(u uint64) {
		if bw.Available() < 8 {
			_ = bw.Flush() // an error sticks: the last Flush returns it
		}
		_, _ = bw.Write(binary.LittleEndian.AppendUint64(bw.AvailableBuffer(), u))
	}
	ls.vectors(func(v *[]float64) {
		for _, x := range *v {
			put(math.Float64bits(x))
		}
	})
	for _, v := range append(slices.Clone(ls.m32), ls.v32...) { // as float64, as State gives them
		for _, x := range v {
			put(math.Float64bits(float64(x)))
		}
	}
	err = bw.Flush()
	return cw.n, err
}

// localBuf is how many bytes writeTo gathers before each write.
const localBuf = 64 << 10

// countWriter counts the bytes written to w.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// decodeLocal decodes a saved local state of a model of n values: its size is checked
// before decoding, unknown fields, other versions and encodings other than the canonical
// one are refused (ErrLocalState). What the values say is checked where they are restored.
func decodeLocal(data []byte, n int) (*localState, error) {
	if len(data) > maxLocalBytes(n) {
		return nil, fmt.Errorf("%w: %d bytes, at most %d for this model", ErrLocalState, len(data), maxLocalBytes(n))
	}
	var h localHeader
	rest, err := localDec.UnmarshalFirst(data, &h)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrLocalState, err)
	}
	if h.Version != localVersion {
		return nil, fmt.Errorf("%w: version %d, this build reads %d", ErrLocalState, h.Version, localVersion)
	}
	if again, err := localEnc.Marshal(&h); err != nil || !bytes.Equal(again, data[:len(data)-len(rest)]) {
		return nil, fmt.Errorf("%w: not in canonical encoding", ErrLocalState)
	}
	ls, err := h.shell(len(rest))
	if err != nil {
		return nil, err
	}
	i := 0
	ls.vectors(func(v *[]float64) {
		if k := h.Vecs[i]; k >= 0 {
			*v = make([]float64, k)
			m, _ := binary.Decode(rest, binary.LittleEndian, *v)
			rest = rest[m:]
		}
		i++
	})
	return ls, nil
}

// shell is the local state h describes, its vectors not yet read, once the vectors h
// lists are checked to take exactly body bytes.
func (h *localHeader) shell(body int) (*localState, error) {
	switch {
	case len(h.Codec) > maxLocalTensors || h.Moments < 0 || h.Moments > maxLocalTensors:
		return nil, fmt.Errorf("%w: %d codec tensors, moments of %d parameters", ErrLocalState, len(h.Codec), h.Moments)
	case len(h.Vecs) != 3*len(h.Codec)+1+2*h.Moments:
		return nil, fmt.Errorf("%w: %d vectors for %d codec tensors and moments of %d parameters", ErrLocalState, len(h.Vecs), len(h.Codec), h.Moments)
	}
	left := body / 8
	for _, k := range h.Vecs {
		if k < -1 || k > int64(left) {
			return nil, fmt.Errorf("%w: a vector of %d values, %d bytes left", ErrLocalState, k, 8*left)
		}
		left -= int(max(k, 0))
	}
	if left != 0 || body%8 != 0 {
		return nil, fmt.Errorf("%w: %d bytes of values, the header lists %d", ErrLocalState, body, body-8*left)
	}
	ls := &localState{Version: h.Version, Round: h.Round, Steps: h.Steps, Drawn: h.Drawn}
	ls.Machine = round.LocalState{OwnRound: h.OwnRound, Share: h.Share}
	for _, t := range h.Codec {
		ls.Machine.Codec.Tensors = append(ls.Machine.Codec.Tensors, compress.TensorState{
			Name: t.Name, Shape: t.Shape, Captured: t.Captured, ResidualNorm: t.ResidualNorm,
			LowRank: t.LowRank, Rank: t.Rank, LastRank: t.LastRank, Energy: t.Energy, Rand: t.Rand,
		})
	}
	ls.Optimizer = training.AdamWState{T: h.OptT}
	if h.Moments > 0 {
		ls.Optimizer.M, ls.Optimizer.V = make([][]float64, h.Moments), make([][]float64, h.Moments)
	}
	return ls, nil
}
