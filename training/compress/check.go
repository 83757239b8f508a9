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
func (m *Message) Check(shapes map[string][]int, maxNorm float64) error {
	for i := range m.pieces {
		p := &m.pieces[i]
		want, ok := shapes[p.Name]
		if !ok || !slices.Equal(want, p.Shape) {
			return fmt.Errorf("%w: tensor %q with shape %v", ErrShape, p.Name, p.Shape)
		}
	}
	var ss float64
	for i := range m.pieces {
		s, err := m.pieces[i].sumSquares(m.block)
		if err != nil {
			return err
		}
		ss += s
	}
	if norm := math.Sqrt(ss); !(norm <= maxNorm) {
		return fmt.Errorf("%w: %g > %g", ErrNormTooLarge, norm, maxNorm)
	}
	return nil
}

// sumSquares returns the sum of squares of the piece's reconstructed values, reconstructing one
// row at a time, and ErrNotFinite if any value is not finite.
func (p *piece) sumSquares(block int) (float64, error) {
	if p.Rank == 0 {
		buf := make([]float64, p.Hi-p.Lo)
		if err := p.reconstruct(buf, block); err != nil {
			return 0, err
		}
		return sumSquares(buf), nil
	}
	f := p.factors(block)
	row := make([]float64, f.cols)
	var ss float64
	for i := 0; i < f.h; i++ {
		f.row(row, i)
		if !allFinite(row) {
			return 0, fmt.Errorf("%w: tensor %q", ErrNotFinite, p.Name)
		}
		ss += sumSquares(row)
	}
	return ss, nil
}
