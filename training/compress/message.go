package compress

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// Tensor is a named dense tensor in row-major order. 2-D tensors with at least
// Config.MinLowRank elements go low-rank; the rest are sent dense.
type Tensor struct {
	Name  string
	Shape []int
	Data  []float64
}

// ErrNotFinite reports a NaN or infinite value, in an input or in a reconstruction.
var ErrNotFinite = errors.New("value not finite")

// Message holds compressed tensors: a whole round's contribution from Encode or Join, or one
// shard of it from DecodeShard. It is immutable once built; its methods may be called
// concurrently.
type Message struct {
	part, parts int
	block       int
	pieces      []piece
	maxShard    int // shard cap used by Shards
}

// Part returns the shard index and count recorded in the message (0 and 1 for a whole message).
func (m *Message) Part() (index, count int) { return m.part, m.parts }

// Bytes returns the canonical encoding of the whole message.
func (m *Message) Bytes() ([]byte, error) { return m.marshal() }

// Decode reconstructs the dense tensors, in the order of their first piece. Rows or elements
// not covered by any piece (a lone shard of a split tensor) are zero. It fails with
// ErrNotFinite if any reconstructed value is NaN or infinite, and ErrMalformed if pieces of one
// tensor disagree on its shape or overlap.
func (m *Message) Decode() ([]Tensor, error) {
	var out []Tensor
	index := map[string]int{}
	target, _, err := m.layout(0, func(p *piece) (int, error) {
		k, seen := index[p.Name]
		if !seen {
			k = len(out)
			index[p.Name] = k
			out = append(out, Tensor{Name: p.Name, Shape: append([]int(nil), p.Shape...)})
		} else if !slices.Equal(out[k].Shape, p.Shape) {
			return 0, fmt.Errorf("%w: tensor %q pieces disagree on shape", ErrMalformed, p.Name)
		}
		return k, nil
	})
	if err != nil {
		return nil, err
	}
	for i := range m.pieces {
		p, t := &m.pieces[i], &out[target[i]]
		if t.Data == nil {
			t.Data = make([]float64, numel(t.Shape))
		}
		lo, hi := p.span()
		if err := p.reconstruct(t.Data[lo:hi], m.block); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// span is the piece's range of row-major elements in the full tensor.
func (p *piece) span() (lo, hi int) {
	if !p.lowRank() {
		return p.Lo, p.Hi
	}
	return p.Lo * p.Shape[1], p.Hi * p.Shape[1]
}

// reconstruct writes the piece's values into dst (length hi-lo of span) and checks they are
// finite.
func (p *piece) reconstruct(dst []float64, block int) error {
	if p.Sparse {
		return p.reconstructSparse(dst, block)
	}
	if !p.lowRank() {
		dequantise(dst, p.Codes, p.Scales, p.Bits, block)
		if (p.Bits == bitsRaw || !scalesFinite(p.Scales)) && !finite(dst) {
			return fmt.Errorf("%w: tensor %q", ErrNotFinite, p.Name)
		}
		return nil
	}
	f := p.factors(block)
	safe := f.bounded()
	for i := 0; i < p.Hi-p.Lo; i++ {
		row := dst[i*f.cols : (i+1)*f.cols]
		f.row(row, i)
		if !safe && !finite(row) { // checked while the row is in cache
			return fmt.Errorf("%w: tensor %q", ErrNotFinite, p.Name)
		}
	}
	return nil
}

// lowRank reports whether the piece is low-rank: private factors (Rank) or shared
// coordinates (SRank) or both; else it is dense or sparse.
func (p *piece) lowRank() bool { return !p.Sparse && (p.Rank > 0 || p.SRank > 0) }

// scalesFinite reports whether every bfloat16 scale is finite: then every dequantised
// value, a code of at most 127 in magnitude times a scale of at most about 3.4e38, is
// finite too.
func scalesFinite(scales []byte) bool {
	for i := 0; i+1 < len(scales); i += 2 {
		if scales[i+1]&0x7f == 0x7f && scales[i]&0x80 != 0 { // exponent all ones: ±Inf or NaN
			return false
		}
	}
	return true
}

// bounded reports whether every value of P·Qᵀ is certainly finite: the factors are
// finite and rank × max|P| × max|Q| leaves room, so that no product and no partial sum of
// reconstructRow can overflow. Then the reconstruction need not be checked value by value.
func (f *factors) bounded() bool {
	if !allFinite(f.p) || !allFinite(f.qt) {
		return false
	}
	return float64(len(f.pr))*maxAbs(f.p)*maxAbs(f.qt) < math.MaxFloat64/4
}

// finite reports whether every value of v is finite: v-v is +0 for a finite value and NaN
// for NaN and ±Inf.
func finite(v []float64) bool {
	for _, x := range v {
		if x-x != 0 {
			return false
		}
	}
	return true
}

// factors holds a low-rank piece's dequantised factors: P in column-major order (rank columns
// of h rows) and Qᵀ (rank × cols, row-major).
type factors struct {
	h, cols int
	p, qt   []float64
	pr      []float64 // one row of P
}

// A piece bound to a shared basis (Message.WithBases) has its SRank shared terms after its
// Rank private ones: the basis' first SRank columns, rows Lo to Hi, as more columns of P,
// and the coordinates as more rows of Qᵀ. A piece with shared terms and no basis bound
// gets its private terms only.
func (p *piece) factors(block int) *factors {
	h, cols, r := p.Hi-p.Lo, p.Shape[1], p.Rank
	s := 0
	if p.basis != nil {
		s = p.SRank
	}
	f := &factors{h: h, cols: cols, p: make([]float64, h*(r+s)), qt: make([]float64, cols*(r+s)), pr: make([]float64, r+s)}
	dequantiseCols(f.p[:h*r], p.Codes, p.Scales, r, p.Bits, block)
	dequantiseCols(f.qt[:cols*r], p.QCodes, p.QScales, r, p.Bits, block)
	if s > 0 {
		b := p.basis
		for c := 0; c < s; c++ {
			pc := f.p[(r+c)*h : (r+c+1)*h]
			for i := range pc {
				pc[i] = b.U[(p.Lo+i)*b.K+c]
			}
		}
		dequantiseCols(f.qt[cols*r:], p.SCodes, p.SScales, s, p.Bits, block)
	}
	return f
}

// WithBases returns m with each of its pieces that carries shared coordinates bound to its
// matrix's basis in b, as the decoders need (Decode, DecodeInto, DecodeDue and the range
// readers refuse a piece with shared coordinates and no basis). It fails with ErrMalformed
// when such a piece's matrix has no basis in b, or one of other rows or fewer columns than
// the piece's shared rank. m is not modified.
func (m *Message) WithBases(b Bases) (*Message, error) {
	out := *m
	out.pieces = slices.Clone(m.pieces)
	for i := range out.pieces {
		p := &out.pieces[i]
		p.basis = nil
		if p.SRank == 0 {
			continue
		}
		u := b[p.Name]
		if u == nil || u.Rows != p.Shape[0] || u.K < p.SRank || len(u.U) != u.Rows*u.K {
			return nil, fmt.Errorf("%w: tensor %q has %d shared coordinates and no basis for them", ErrMalformed, p.Name, p.SRank)
		}
		p.basis = u
	}
	return &out, nil
}

// row writes row i of P·Qᵀ into dst.
func (f *factors) row(dst []float64, i int) {
	for k := range f.pr {
		f.pr[k] = f.p[k*f.h+i]
	}
	reconstructRow(dst, f.pr, f.qt)
}

// reconstructRow computes one row of P·Qᵀ: row[j] = Σ_k p[k]·qt[k·cols+j], summed in order
// k = 0, 1, ... from +0, with every product rounded before it is added (no fused
// multiply-add), so every machine gets the same bits. The first pass starts each sum from
// the constant 0 instead of a cleared row (0 + x is x, but for -0, which becomes +0, as
// it would from a cleared row), which saves clearing the row.
func reconstructRow(row, p, qt []float64) {
	cols := len(row)
	if len(p) == 0 {
		clear(row)
		return
	}
	k := 0
	if len(p) >= 4 {
		a, b, c, d := p[0], p[1], p[2], p[3]
		q0, q1, q2, q3 := qt[:cols], qt[cols:2*cols], qt[2*cols:3*cols], qt[3*cols:4*cols]
		for j := range row {
			s := 0 + float64(a*q0[j])
			s += float64(b * q1[j])
			s += float64(c * q2[j])
			row[j] = s + float64(d*q3[j])
		}
		k = 4
	}
	for ; k+4 <= len(p); k += 4 { // four terms per pass; the order of the additions is unchanged
		a, b, c, d := p[k], p[k+1], p[k+2], p[k+3]
		q0, q1 := qt[k*cols:(k+1)*cols], qt[(k+1)*cols:(k+2)*cols]
		q2, q3 := qt[(k+2)*cols:(k+3)*cols], qt[(k+3)*cols:(k+4)*cols]
		for j := range row {
			s := row[j] + float64(a*q0[j])
			s += float64(b * q1[j])
			s += float64(c * q2[j])
			row[j] = s + float64(d*q3[j])
		}
	}
	first := k == 0
	switch len(p) - k { // the remaining one to three terms in one pass, in the same order
	case 1:
		a, q0 := p[k], qt[k*cols:(k+1)*cols]
		if first {
			for j := range row {
				row[j] = 0 + float64(a*q0[j])
			}
			return
		}
		for j := range row {
			row[j] += float64(a * q0[j])
		}
	case 2:
		a, b := p[k], p[k+1]
		q0, q1 := qt[k*cols:(k+1)*cols], qt[(k+1)*cols:(k+2)*cols]
		if first {
			for j := range row {
				s := 0 + float64(a*q0[j])
				row[j] = s + float64(b*q1[j])
			}
			return
		}
		for j := range row {
			s := row[j] + float64(a*q0[j])
			row[j] = s + float64(b*q1[j])
		}
	case 3:
		a, b, c := p[k], p[k+1], p[k+2]
		q0, q1, q2 := qt[k*cols:(k+1)*cols], qt[(k+1)*cols:(k+2)*cols], qt[(k+2)*cols:(k+3)*cols]
		if first {
			for j := range row {
				s := 0 + float64(a*q0[j])
				s += float64(b * q1[j])
				row[j] = s + float64(c*q2[j])
			}
			return
		}
		for j := range row {
			s := row[j] + float64(a*q0[j])
			s += float64(b * q1[j])
			row[j] = s + float64(c*q2[j])
		}
	}
}

func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}
