package compress

import (
	"fmt"
	"slices"
)

// DecodeInto reconstructs a whole message directly into dst, the tensors the receiver
// expects: every piece must name a tensor of dst with the same shape, pieces must not
// overlap, and together they must cover every element of every tensor in dst. Data slices
// of dst must have the length of their shape (they may be views into one flat vector). It
// writes the same values as Decode, without allocating the tensors. Errors wrap
// ErrMalformed (a piece that does not fit dst), ErrNotFinite or ErrInput (dst itself is
// unusable); on error dst holds partial values.
func (m *Message) DecodeInto(dst []Tensor) error {
	index := make(map[string]int, len(dst))
	for i, t := range dst {
		if _, dup := index[t.Name]; dup || numel(t.Shape) != len(t.Data) {
			return fmt.Errorf("%w: destination tensor %q repeated or not of shape %v", ErrInput, t.Name, t.Shape)
		}
		index[t.Name] = i
	}
	covered := make([][][2]int, len(dst))
	filled := make([]int, len(dst))
	for i := range m.pieces {
		p := &m.pieces[i]
		k, ok := index[p.Name]
		if !ok || !slices.Equal(dst[k].Shape, p.Shape) {
			return fmt.Errorf("%w: tensor %q %v is not expected", ErrMalformed, p.Name, p.Shape)
		}
		lo, hi := p.span()
		for _, r := range covered[k] {
			if lo < r[1] && r[0] < hi {
				return fmt.Errorf("%w: tensor %q pieces overlap", ErrMalformed, p.Name)
			}
		}
		covered[k] = append(covered[k], [2]int{lo, hi})
		filled[k] += hi - lo
		if err := p.reconstruct(dst[k].Data[lo:hi], m.block); err != nil {
			return err
		}
	}
	for k, t := range dst {
		if filled[k] != len(t.Data) {
			return fmt.Errorf("%w: tensor %q has %d of %d values", ErrMalformed, t.Name, filled[k], len(t.Data))
		}
	}
	return nil
}
