package compress

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// RangeReader reads a whole message's reconstruction a range of values at a time, laid out
// as DecodeInto's destination tensors would be when they are views, one after another,
// into one flat vector. It keeps each low-rank piece's dequantised factors (rank times
// rows plus columns values), never the reconstruction, so a receiver can go through many
// contributions coordinate range by coordinate range without holding one whole.
type RangeReader struct {
	m      *Message
	size   int
	starts []int       // flat position of each piece's first value
	f      []*factors  // dequantised factors of each low-rank piece, made on first use
	sparse [][]float64 // each sparse piece's values over its span, made on first use
	row    []float64
	gaps   bool // some tensor is not due: its values, covered by no piece, read as zero
}

// NewRangeReader checks the message against like as DecodeInto checks it against its
// destination (names, shapes, no overlap, every value covered; like's Data is not read,
// only its length must match the shape when it is not nil) and returns a reader of its
// values in like's flat order. Errors wrap ErrInput or ErrMalformed.
func (m *Message) NewRangeReader(like []Tensor) (*RangeReader, error) {
	return m.NewRangeReaderDue(like, nil)
}

// NewRangeReaderDue is NewRangeReader for a round in which only the tensors of like whose
// due flag is set are carried, as DecodeDue checks it: every due tensor covered, no piece
// of any other, whose values read as zero. due, when not nil, has one entry per tensor of
// like.
func (m *Message) NewRangeReaderDue(like []Tensor, due []bool) (*RangeReader, error) {
	if due != nil && len(due) != len(like) {
		return nil, fmt.Errorf("%w: %d due flags for %d tensors", ErrInput, len(due), len(like))
	}
	index := make(map[string]int, len(like))
	offsets := make([]int, len(like))
	size := 0
	for i, t := range like {
		if _, dup := index[t.Name]; dup || t.Data != nil && numel(t.Shape) != len(t.Data) {
			return nil, fmt.Errorf("%w: destination tensor %q repeated or not of shape %v", ErrInput, t.Name, t.Shape)
		}
		index[t.Name], offsets[i] = i, size
		size += numel(t.Shape)
	}
	target, filled, err := m.layout(len(like), func(p *piece) (int, error) {
		k, ok := index[p.Name]
		if !ok || !slices.Equal(like[k].Shape, p.Shape) {
			return 0, fmt.Errorf("%w: tensor %q %v is not expected", ErrMalformed, p.Name, p.Shape)
		}
		if due != nil && !due[k] {
			return 0, fmt.Errorf("%w: tensor %q is not due in this round", ErrMalformed, p.Name)
		}
		return k, nil
	})
	if err != nil {
		return nil, err
	}
	gaps := false
	for k, t := range like {
		if due != nil && !due[k] {
			gaps = true
			continue
		}
		if filled[k] != numel(t.Shape) {
			return nil, fmt.Errorf("%w: tensor %q has %d of %d values", ErrMalformed, t.Name, filled[k], numel(t.Shape))
		}
	}
	r := &RangeReader{m: m, size: size, starts: make([]int, len(m.pieces)), f: make([]*factors, len(m.pieces)),
		sparse: make([][]float64, len(m.pieces)), gaps: gaps}
	for i := range m.pieces {
		lo, _ := m.pieces[i].span()
		r.starts[i] = offsets[target[i]] + lo
	}
	return r, nil
}

// Len is the number of values in all.
func (r *RangeReader) Len() int { return r.size }

// Read writes the values [lo, hi) into dst, of length hi - lo: the same bits DecodeInto
// writes at those positions. It fails with ErrNotFinite when one of them is NaN or
// infinite, and ErrInput for a range outside [0, Len()).
func (r *RangeReader) Read(lo, hi int, dst []float64) error {
	if lo < 0 || hi < lo || hi > r.size || len(dst) != hi-lo {
		return fmt.Errorf("%w: range [%d, %d) of %d values into %d", ErrInput, lo, hi, r.size, len(dst))
	}
	if r.gaps {
		clear(dst) // the tensors not due are zero; the pieces overwrite the rest
	}
	for i := range r.m.pieces {
		p := &r.m.pieces[i]
		plo, phi := p.span()
		start := r.starts[i]
		a, b := max(start, lo), min(start+phi-plo, hi)
		if a >= b {
			continue
		}
		out := dst[a-lo : b-lo]
		if p.Sparse {
			vals, err := r.sparseValues(i)
			if err != nil {
				return err
			}
			copy(out, vals[a-start:b-start])
		} else if !p.lowRank() {
			dequantiseRange(out, p.Codes, p.Scales, p.Bits, r.m.block, a-start)
		} else {
			r.lowRank(i, a-start, out)
		}
		if !finite(out) {
			return fmt.Errorf("%w: tensor %q", ErrNotFinite, p.Name)
		}
	}
	return nil
}

// sparseValues is sparse piece i's values over its whole span, as reconstruct writes them
// (made once: a sparse piece is a measurement codec's, whose index gaps decode in order).
func (r *RangeReader) sparseValues(i int) ([]float64, error) {
	if r.sparse[i] == nil {
		p := &r.m.pieces[i]
		lo, hi := p.span()
		vals := make([]float64, hi-lo)
		if err := p.reconstruct(vals, r.m.block); err != nil {
			return nil, err
		}
		r.sparse[i] = vals
	}
	return r.sparse[i], nil
}

// lowRank writes the values of low-rank piece i from its own position from on into out.
func (r *RangeReader) lowRank(i, from int, out []float64) {
	if r.f[i] == nil {
		r.f[i] = r.m.pieces[i].factors(r.m.block)
	}
	f := r.f[i]
	if cap(r.row) < f.cols {
		r.row = make([]float64, f.cols)
	}
	row := r.row[:f.cols]
	for done := 0; done < len(out); {
		k, c := (from+done)/f.cols, (from+done)%f.cols
		n := min(f.cols-c, len(out)-done)
		if c == 0 && n == f.cols {
			f.row(out[done:done+n], k)
		} else {
			f.row(row, k)
			copy(out[done:done+n], row[c:c+n])
		}
		done += n
	}
}

// dequantiseRange writes the values from, from+1, ... of a dense code string into out, each
// with dequantise's own arithmetic.
func dequantiseRange(out []float64, codes, scales []byte, bits, block, from int) {
	for j := range out {
		i := from + j
		if bits == bitsRaw {
			out[j] = math.Float64frombits(binary.LittleEndian.Uint64(codes[8*i:]))
			continue
		}
		s := bf16(binary.LittleEndian.Uint16(scales[2*(i/block):]))
		switch bits {
		case bits1:
			out[j] = level1(codes, i) * s
		case bits2:
			c := int8(codes[i/4]>>(2*(i%4))<<6) >> 6
			out[j] = float64(2*int(c)+1) * s
		case bits8:
			out[j] = float64(int8(codes[i])) * s
		default:
			out[j] = float64(int8(codes[i/2]>>(4*(i%2))<<4)>>4) * s
		}
	}
}
