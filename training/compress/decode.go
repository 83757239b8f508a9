package compress

import (
	"cmp"
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
func (m *Message) DecodeInto(dst []Tensor) error { return m.DecodeDue(dst, nil) }

// DecodeDue is DecodeInto for a message of a round in which only the tensors with due[k]
// set are carried (Config.Due; nil: all of them): the message must cover every element of
// every due tensor and hold no piece of any other, whose values are set to zero, the
// missing tensor counting as zero. A message that leaves out a due tensor, or carries one
// that is not due, fails with ErrMalformed. due, when not nil, has one entry per tensor of
// dst.
func (m *Message) DecodeDue(dst []Tensor, due []bool) error {
	if due != nil && len(due) != len(dst) {
		return fmt.Errorf("%w: %d due flags for %d tensors", ErrInput, len(due), len(dst))
	}
	index := make(map[string]int, len(dst))
	for i, t := range dst {
		if _, dup := index[t.Name]; dup || numel(t.Shape) != len(t.Data) {
			return fmt.Errorf("%w: destination tensor %q repeated or not of shape %v", ErrInput, t.Name, t.Shape)
		}
		index[t.Name] = i
	}
	target, filled, err := m.layout(len(dst), func(p *piece) (int, error) {
		k, ok := index[p.Name]
		if !ok || !slices.Equal(dst[k].Shape, p.Shape) {
			return 0, fmt.Errorf("%w: tensor %q %v is not expected", ErrMalformed, p.Name, p.Shape)
		}
		if due != nil && !due[k] {
			return 0, fmt.Errorf("%w: tensor %q is not due in this round", ErrMalformed, p.Name)
		}
		return k, nil
	})
	if err != nil {
		return err
	}
	for k, t := range dst {
		if due != nil && !due[k] {
			clear(t.Data)
			continue
		}
		if filled[k] != len(t.Data) {
			return fmt.Errorf("%w: tensor %q has %d of %d values", ErrMalformed, t.Name, filled[k], len(t.Data))
		}
	}
	for i := range m.pieces {
		p := &m.pieces[i]
		lo, hi := p.span()
		if err := p.reconstruct(dst[target[i]].Data[lo:hi], m.block); err != nil {
			return err
		}
	}
	return nil
}

// layout assigns every piece to a tensor with tensorOf, which returns an index below n (or,
// for n = 0, at most one more than any index it returned before), and checks that the pieces
// of each tensor do not overlap. It returns each piece's tensor and the number of values the
// pieces of each tensor cover.
func (m *Message) layout(n int, tensorOf func(*piece) (int, error)) (target, filled []int, err error) {
	target, filled = make([]int, len(m.pieces)), make([]int, n)
	spans, names := make([][][2]int, n), make([]string, n)
	for i := range m.pieces {
		p := &m.pieces[i]
		if p.SRank > 0 && p.basis == nil {
			return nil, nil, fmt.Errorf("%w: tensor %q has shared coordinates and no basis bound (Message.WithBases)", ErrMalformed, p.Name)
		}
		k, err := tensorOf(p)
		if err != nil {
			return nil, nil, err
		}
		if k == len(spans) {
			spans, filled, names = append(spans, nil), append(filled, 0), append(names, "")
		}
		lo, hi := p.span()
		spans[k] = append(spans[k], [2]int{lo, hi})
		filled[k] += hi - lo
		names[k], target[i] = p.Name, k
	}
	for k, s := range spans {
		if !disjoint(s) {
			return nil, nil, fmt.Errorf("%w: tensor %q pieces overlap", ErrMalformed, names[k])
		}
	}
	return target, filled, nil
}

// disjoint reports whether the non-empty ranges [lo, hi) do not overlap. It sorts them by
// start and compares neighbours: O(k log k) for k ranges, where comparing every pair would
// make decoding a message of many pieces quadratic.
func disjoint(rs [][2]int) bool {
	slices.SortFunc(rs, func(a, b [2]int) int { return cmp.Compare(a[0], b[0]) })
	for i := 1; i < len(rs); i++ {
		if rs[i][0] < rs[i-1][1] {
			return false
		}
	}
	return true
}
