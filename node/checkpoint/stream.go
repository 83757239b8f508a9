package checkpoint

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"io"
	"math"
)

// WriteTo writes the checkpoint's canonical encoding (the bytes Encode returns) to w a
// piece at a time, reading θ, the momentum and the ledger in place: it holds no copy of
// the values and no buffer of the encoding's size, so that making a checkpoint of a large
// model costs a node little more memory than the model it already holds.
func (c *Checkpoint) WriteTo(w io.Writer) (int64, error) {
	return c.writeTo(w, c.ledgerBytes(), streamBuf)
}

// ledgerBytes is the ledger's canonical encoding (nil: none).
func (c *Checkpoint) ledgerBytes() []byte {
	if c.Ledger == nil {
		return nil
	}
	return c.Ledger.Marshal()
}

// writeTo is WriteTo with the ledger's encoding given, gathering up to bufSize bytes
// before each write.
func (c *Checkpoint) writeTo(w io.Writer, ledger []byte, bufSize int) (int64, error) {
	e := newCBORWriter(w, bufSize)
	// wireCheckpoint's fields, keys 1 to 8 in order (Core Deterministic: all one byte).
	e.head(majorMap, 8)
	e.key(1)
	e.head(majorUint, Version)
	e.key(2)
	e.text(c.Network)
	e.key(3)
	e.text(c.Run)
	e.key(4)
	e.head(majorUint, c.Round)
	e.key(5)
	e.bytes(c.Prev[:])
	e.key(6)
	if len(c.Model.Params) == 0 { // wire's list, built by append, is nil: CBOR null
		e.null()
	} else {
		e.head(majorArray, uint64(len(c.Model.Params)))
		for _, t := range c.Model.Params {
			e.head(majorMap, 3)
			e.key(1)
			e.text(t.Name)
			e.key(2)
			e.head(majorArray, uint64(len(t.Shape)))
			for _, d := range t.Shape {
				e.head(majorUint, uint64(int64(d)))
			}
			e.key(3)
			e.floats(t.Data)
		}
	}
	e.key(7)
	e.floats(c.Model.Momentum)
	e.key(8)
	if ledger == nil {
		e.null()
	} else {
		e.bytes(ledger)
	}
	return e.flush()
}

// WriteSplit writes the checkpoint's encoding to w (WriteTo) and returns its manifest, as
// Split would give it for the same chunk size (0: DefaultChunkSize): each chunk's SHA-256
// is taken as its bytes pass.
func WriteSplit(c *Checkpoint, chunkSize int, w io.Writer) (*Manifest, error) {
	if chunkSize <= 0 {
		chunkSize = DefaultChunkSize
	}
	ch := &chunker{w: w, size: chunkSize, h: sha256.New()}
	n, err := c.WriteTo(ch)
	if err != nil {
		return nil, err
	}
	ch.finish()
	return &Manifest{Version: Version, Network: c.Network, Run: c.Run, Round: c.Round, Root: c.Root(),
		Size: uint64(n), ChunkSize: uint32(chunkSize), Chunks: ch.sums}, nil
}

// chunker passes bytes on to w and takes the SHA-256 of every size bytes.
type chunker struct {
	w    io.Writer
	size int
	h    hash.Hash
	fill int
	sums [][32]byte
}

func (c *chunker) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	for q := p[:n]; len(q) > 0; {
		k := min(len(q), c.size-c.fill)
		c.h.Write(q[:k])
		c.fill += k
		q = q[k:]
		if c.fill == c.size {
			c.finish()
		}
	}
	return n, err
}

// finish closes the chunk under way, if any.
func (c *chunker) finish() {
	if c.fill > 0 {
		c.sums = append(c.sums, [32]byte(c.h.Sum(nil)))
		c.h.Reset()
		c.fill = 0
	}
}

// streamBuf is how many bytes the encoder gathers before each write.
const streamBuf = 64 << 10

const (
	majorUint  = 0
	majorBytes = 2
	majorText  = 3
	majorArray = 4
	majorMap   = 5
)

// cborWriter writes canonical CBOR heads and values through a bufio.Writer, whose first
// error sticks; n counts the bytes that reached the writer under it.
type cborWriter struct {
	bw *bufio.Writer
	n  int64
}

func newCBORWriter(w io.Writer, size int) *cborWriter {
	e := &cborWriter{}
	e.bw = bufio.NewWriterSize(countingWriter{w, &e.n}, size)
	return e
}

type countingWriter struct {
	w io.Writer
	n *int64
}

func (c countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	*c.n += int64(n)
	return n, err
}

func (e *cborWriter) head(major byte, v uint64) {
	var a [9]byte
	b := a[:0]
	switch {
	case v < 24:
		b = append(b, major<<5|byte(v))
	case v <= math.MaxUint8:
		b = append(b, major<<5|24, byte(v))
	case v <= math.MaxUint16:
		b = binary.BigEndian.AppendUint16(append(b, major<<5|25), uint16(v))
	case v <= math.MaxUint32:
		b = binary.BigEndian.AppendUint32(append(b, major<<5|26), uint32(v))
	default:
		b = binary.BigEndian.AppendUint64(append(b, major<<5|27), v)
	}
	_, _ = e.bw.Write(b)
}

func (e *cborWriter) key(k uint64) { e.head(majorUint, k) }

func (e *cborWriter) null() { _ = e.bw.WriteByte(0xf6) }

func (e *cborWriter) text(s string) {
	e.head(majorText, uint64(len(s)))
	_, _ = e.bw.WriteString(s)
}

func (e *cborWriter) bytes(p []byte) {
	e.head(majorBytes, uint64(len(p)))
	_, _ = e.bw.Write(p)
}

// floats writes xs as one byte string of IEEE-754 bits, 8 bytes little endian each (an
// empty one for nil, as floatBytes gives it), straight into the buffer's free space.
func (e *cborWriter) floats(xs []float64) {
	e.head(majorBytes, 8*uint64(len(xs)))
	for len(xs) > 0 {
		if e.bw.Available() < 8 && e.bw.Flush() != nil {
			return // the error sticks: the caller's flush returns it
		}
		b := e.bw.AvailableBuffer()
		k := min(len(xs), cap(b)/8)
		for _, x := range xs[:k] {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
		}
		_, _ = e.bw.Write(b)
		xs = xs[k:]
	}
}

// flush writes what the buffer holds and returns the first error of the writing.
func (e *cborWriter) flush() (int64, error) {
	err := e.bw.Flush()
	return e.n, err
}
