package compress

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// Content-check failures returned by CheckShard and Message.Check (wrapped with detail; test
// with errors.Is). ErrNotFinite (see Decode) reports NaN or infinite values.
var (
	ErrUndecodable  = errors.New("shard undecodable")
	ErrShape        = errors.New("unexpected tensor name or shape")
	ErrNormTooLarge = errors.New("shard norm too large")
)

// CheckShard is the deterministic content check a receiver runs on a shard payload, and that
// anyone can re-run to confirm evidence. In order: the payload decodes within lim
// (ErrUndecodable, wrapping the decoding error); every tensor's name is in shapes with that
// shape (ErrShape); every reconstructed value is finite (ErrNotFinite); the L2 norm of all
// reconstructed values is at most maxNorm (ErrNormTooLarge).
func CheckShard(data []byte, shapes map[string][]int, maxNorm float64, lim Limits) error {
	m, err := DecodeShard(data, lim)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUndecodable, err)
	}
	return m.Check(shapes, maxNorm)
}

// Check runs the shape, finiteness and norm checks of CheckShard on a decoded message. Its
// memory use is bounded by the encoded size plus one row of the widest tensor.
//
// Its verdict is that of checkValues, which reconstructs every value. Most messages pass
// with a wide margin, and surelyWithin shows that from the factors alone, in time linear
// in the rows and columns instead of their product; a message it cannot clear that way is
// checked value by value.
func (m *Message) Check(shapes map[string][]int, maxNorm float64) error {
	if err := m.checkShapes(shapes); err != nil {
		return err
	}
	if m.surelyWithin(maxNorm) {
		return nil
	}
	return m.checkValues(maxNorm)
}

// checkShapes is Check's shape check.
func (m *Message) checkShapes(shapes map[string][]int) error {
	for i := range m.pieces {
		p := &m.pieces[i]
		want, ok := shapes[p.Name]
		if !ok || !slices.Equal(want, p.Shape) {
			return fmt.Errorf("%w: tensor %q with shape %v", ErrShape, p.Name, p.Shape)
		}
	}
	return nil
}

// checkValues is Check's finiteness and norm check on every reconstructed value, the
// definition of its verdict.
func (m *Message) checkValues(maxNorm float64) error {
	ss, err := m.valuesSumSquares()
	if err != nil {
		return err
	}
	if norm := math.Sqrt(ss); !(norm <= maxNorm) {
		return fmt.Errorf("%w: %g > %g", ErrNormTooLarge, norm, maxNorm)
	}
	return nil
}

// valuesSumSquares is the sum of squares of every reconstructed value, piece by piece and
// row by row, or ErrNotFinite.
func (m *Message) valuesSumSquares() (float64, error) {
	var ss float64
	for i := range m.pieces {
		s, err := m.pieces[i].sumSquares(m.block)
		if err != nil {
			return 0, err
		}
		ss += s
	}
	return ss, nil
}

// sumSquares returns the sum of squares of the piece's reconstructed values, reconstructing one
// row at a time, and ErrNotFinite if any value is not finite.
func (p *piece) sumSquares(block int) (float64, error) {
	if !p.lowRank() {
		buf := make([]float64, p.Hi-p.Lo)
		if err := p.reconstruct(buf, block); err != nil {
			return 0, err
		}
		return sumSquares(buf), nil
	}
	q := *p
	q.basis = nil // shared terms are bounded below, not reconstructed
	f := q.factors(block)
	safe := f.bounded()
	row := make([]float64, f.cols)
	var ss float64
	for i := 0; i < f.h; i++ {
		f.row(row, i)
		if !safe && !allFinite(row) {
			return 0, fmt.Errorf("%w: tensor %q", ErrNotFinite, p.Name)
		}
		ss += sumSquares(row)
	}
	if p.SRank == 0 {
		return ss, nil
	}
	cs, err := p.sharedSumSquares(block)
	if err != nil {
		return 0, err
	}
	return sharedBound(ss, cs), nil
}

// sharedSumSquares is ‖C‖², the sum of squares of a piece's dequantised shared
// coordinates, or ErrNotFinite.
func (p *piece) sharedSumSquares(block int) (float64, error) {
	cols := p.Shape[1]
	c := make([]float64, cols*p.SRank)
	dequantiseCols(c, p.SCodes, p.SScales, p.SRank, p.Bits, block)
	if !allFinite(c) {
		return 0, fmt.Errorf("%w: tensor %q", ErrNotFinite, p.Name)
	}
	cs := sumSquares(c)
	if math.IsInf(cs, 0) {
		return 0, fmt.Errorf("%w: tensor %q", ErrNotFinite, p.Name)
	}
	return cs, nil
}

// sharedBound is what the content check counts for a piece with shared coordinates, whose
// basis a shard alone does not give: (‖private terms‖ + ‖C‖)², with ss the private terms'
// sum of squares and cs ‖C‖². The basis is orthonormal, so ‖U·C‖ is ‖C‖ (to rounding, which
// normMargin covers), and the triangle inequality makes this at least the piece's own sum
// of squares.
func sharedBound(ss, cs float64) float64 {
	r := math.Sqrt(ss) + math.Sqrt(cs)
	return float64(r * r)
}

// Margins of surelyWithin. The sum of squares checkValues computes, and the one
// surelyWithin computes from Gram matrices, each differ from the exact sum by at most a few
// times (terms summed) x (unit roundoff) x bound, where bound = Σ_ab (|P|ᵀ|P|)_ab (|Q|ᵀ|Q|)_ab
// is at least Σ_ij (Σ_k |P_ik| |Q_jk|)²: for at most 2^31 values that is under 1e-6 x bound,
// so gramSlack leaves room many times over. normMargin covers the rounding of the square root
// and of the sum across pieces.
const (
	gramSlack  = 1e-6
	normMargin = 1e-9
)

// surelyWithin reports whether checkValues certainly passes the message for maxNorm, from
// its low-rank factors without reconstructing them: every factor is finite, no
// reconstructed value can overflow (rank x max|P| x max|Q| is finite with room), and the
// sum of squares plus its rounding slack is under maxNorm² by a margin. Dense pieces are
// summed as checkValues sums them. False means only that the values must be checked.
func (m *Message) surelyWithin(maxNorm float64) bool {
	if !(maxNorm > 0) {
		return false
	}
	var ss, slack float64
	for i := range m.pieces {
		p := &m.pieces[i]
		if !p.lowRank() {
			s, err := p.sumSquares(m.block)
			if err != nil {
				return false
			}
			ss += s
			continue
		}
		q := *p
		q.basis = nil
		var s, e float64
		if ok := true; q.Rank > 0 {
			if s, e, ok = q.factors(m.block).gramSumSquares(); !ok {
				return false
			}
		}
		if p.SRank > 0 {
			cs, err := p.sharedSumSquares(m.block)
			if err != nil {
				return false
			}
			s, e = sharedBound(s+e, cs), 0
		}
		ss, slack = ss+s, slack+e
	}
	hi := ss + slack + float64(normMargin*ss)
	if math.IsInf(hi, 0) || math.IsNaN(hi) {
		return false
	}
	return math.IsInf(maxNorm, 1) || math.Sqrt(hi) < maxNorm*(1-normMargin)
}

// SurelyWithinNorm reports whether every value m decodes to is certainly finite and the L2
// norm of all of them, their squares summed in any order, certainly at most maxNorm (+Inf:
// finite is enough), from its factors alone, without reconstructing the values: the test
// of surelyWithin with the shared terms of a piece bound to its basis (Message.WithBases)
// taken as more factor columns, and a slack for summing all the values' squares in one
// running sum. It is false for a piece with shared coordinates and no basis bound, and
// false means only that the values must be checked. A reader that would reconstruct every
// value only to check them (a round's contribution reader) may skip that when it is true:
// the check would pass.
func (m *Message) SurelyWithinNorm(maxNorm float64) bool {
	if !(maxNorm > 0) {
		return false
	}
	var ss, slack float64
	n := 0
	for i := range m.pieces {
		p := &m.pieces[i]
		lo, hi := p.span()
		n += hi - lo
		if !p.lowRank() {
			s, err := p.sumSquares(m.block)
			if err != nil {
				return false
			}
			ss += s
			continue
		}
		if p.SRank > 0 && p.basis == nil {
			return false
		}
		s, e, ok := p.factors(m.block).gramSumSquares()
		if !ok {
			return false
		}
		ss, slack = ss+s, slack+e
	}
	// The values' squares sum to at most ss plus twice the slack (the Gram sum and the
	// values are each within the slack of the exact sum); one running sum of n squares
	// adds at most n units of roundoff of that, for which 2n·2⁻⁵² leaves room.
	hi := ss + 2*slack
	hi += float64(float64(2*n) * 0x1p-52 * hi)
	hi += float64(normMargin * hi)
	if math.IsInf(hi, 0) || math.IsNaN(hi) {
		return false
	}
	return math.IsInf(maxNorm, 1) || math.Sqrt(hi) < maxNorm*(1-normMargin)
}

// gramSumSquares returns the sum of squares of P·Qᵀ computed as Σ_ab (PᵀP)_ab (QᵀQ)_ab, and
// a bound on how far that and the row-by-row sum (piece.sumSquares) may each be from the
// exact value; ok is false when a factor is not finite or a value could overflow.
func (f *factors) gramSumSquares() (ss, slack float64, ok bool) {
	r := len(f.pr)
	if r == 0 || !allFinite(f.p) || !allFinite(f.qt) {
		return 0, 0, false
	}
	if bound := float64(r) * maxAbs(f.p) * maxAbs(f.qt); !(bound < math.MaxFloat64/4) {
		return 0, 0, false
	}
	var abs float64
	for a := range r {
		pa, qa := f.p[a*f.h:(a+1)*f.h], f.qt[a*f.cols:(a+1)*f.cols]
		for b := range r {
			pb, qb := f.p[b*f.h:(b+1)*f.h], f.qt[b*f.cols:(b+1)*f.cols]
			gp, ap := dots(pa, pb)
			gq, aq := dots(qa, qb)
			ss += float64(gp * gq)
			abs += float64(ap * aq)
		}
	}
	slack = gramSlack * abs
	if math.IsInf(abs, 0) || math.IsNaN(ss) {
		return 0, 0, false
	}
	return ss, slack, true
}

// dots returns Σ x_i y_i and Σ |x_i| |y_i|.
func dots(x, y []float64) (dot, abs float64) {
	for i, xi := range x {
		dot += float64(xi * y[i])
		abs += float64(math.Abs(xi) * math.Abs(y[i]))
	}
	return dot, abs
}

func maxAbs(v []float64) float64 {
	var m float64
	for _, x := range v {
		m = max(m, math.Abs(x))
	}
	return m
}
