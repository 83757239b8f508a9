package compress

import (
	"errors"
	"fmt"
	"slices"
)

// ErrState is returned (wrapped) by SetState for a state this Encoder cannot have made:
// another model's tensors, ranks out of bounds, sizes that disagree, values not finite.
var ErrState = errors.New("compress: encoder state out of form")

// EncoderState is what an Encoder keeps between rounds: per tensor, in first-seen order,
// the error-feedback residual and, for a low-rank tensor, the warm-start Q, the rank and
// the generator that fills new columns of Q. It is this node's own, never sent to peers;
// a restart restores it with SetState so that the codec goes on where it stopped.
type EncoderState struct {
	Tensors []TensorState `cbor:"1,keyasint"`
	// Rounds is the number of messages encoded under a byte budget, Debt the bytes of the
	// first one's extra budget not yet repaid (Config.FirstBudget).
	Rounds uint64 `cbor:"2,keyasint,omitempty"`
	Debt   int    `cbor:"3,keyasint,omitempty"`
}

// TensorState is one tensor's part of an EncoderState.
type TensorState struct {
	Name         string    `cbor:"1,keyasint"`
	Shape        []int     `cbor:"2,keyasint"`
	Residual     []float64 `cbor:"3,keyasint"`
	Captured     float64   `cbor:"4,keyasint"`
	ResidualNorm float64   `cbor:"5,keyasint"`
	// Low-rank tensors only (LowRank set).
	LowRank  bool      `cbor:"6,keyasint"`
	Rank     int       `cbor:"7,keyasint"`
	LastRank int       `cbor:"8,keyasint"`
	Q        []float64 `cbor:"9,keyasint"` // cols × Rank, row-major
	Gains    []float64 `cbor:"10,keyasint"`
	Energy   float64   `cbor:"11,keyasint"`
	Rand     []byte    `cbor:"12,keyasint"` // the generator's state (rand.PCG.MarshalBinary)
	// Pending: a tensor left out of a message (Config.DenseEvery for a dense one,
	// Config.Fragments for a low-rank one) since it was last sent; Held: left out of the
	// last one.
	Pending bool `cbor:"13,keyasint,omitempty"`
	Held    bool `cbor:"14,keyasint,omitempty"`
}

// State returns a copy of the Encoder's state.
func (e *Encoder) State() EncoderState {
	out := EncoderState{Tensors: make([]TensorState, 0, len(e.order)), Rounds: e.rounds, Debt: e.debt}
	for _, name := range e.order {
		st := e.state[name]
		ts := TensorState{Name: name, Shape: slices.Clone(st.shape), Residual: slices.Clone(st.residual),
			Captured: st.captured, ResidualNorm: st.residualNorm, Pending: st.pending, Held: st.held}
		if lr := st.lr; lr != nil {
			ts.LowRank, ts.Rank, ts.LastRank = true, lr.rank, lr.lastRank
			ts.Q, ts.Gains, ts.Energy = slices.Clone(lr.q), slices.Clone(lr.gains), lr.energy
			ts.Rand, _ = lr.src.MarshalBinary() // cannot fail
		}
		out.Tensors = append(out.Tensors, ts)
	}
	return out
}

// SetState replaces the Encoder's state by st, which it copies, after checking it against
// the Encoder's configuration: distinct names, shapes in form with as many residual values,
// low-rank exactly where the configuration makes a tensor low-rank, with a rank in its
// bounds and a Q of that rank, finite values, a debt within what Config.FirstBudget can
// owe. On error (wrapping ErrState) nothing changes.
func (e *Encoder) SetState(st EncoderState) error {
	if st.Debt < 0 || st.Debt > int(float64(MaxFirstBudget)*float64(e.cfg.ByteBudget)) {
		return fmt.Errorf("%w: debt %d for a byte budget of %d", ErrState, st.Debt, e.cfg.ByteBudget)
	}
	state := make(map[string]*tensorState, len(st.Tensors))
	order := make([]string, 0, len(st.Tensors))
	for i := range st.Tensors {
		ts := &st.Tensors[i]
		if _, dup := state[ts.Name]; dup || ts.Name == "" || len(ts.Name) > 256 {
			return fmt.Errorf("%w: empty, long or repeated name %q", ErrState, ts.Name)
		}
		s, err := e.tensorFrom(ts)
		if err != nil {
			return fmt.Errorf("%w: %q: %v", ErrState, ts.Name, err)
		}
		state[ts.Name] = s
		order = append(order, ts.Name)
	}
	e.state, e.order, e.rounds, e.debt = state, order, st.Rounds, st.Debt
	return nil
}

// tensorFrom checks one tensor's state and builds it.
func (e *Encoder) tensorFrom(ts *TensorState) (*tensorState, error) {
	if len(ts.Shape) == 0 || len(ts.Shape) > maxDims || !positive(ts.Shape) || numel(ts.Shape) != len(ts.Residual) {
		return nil, fmt.Errorf("shape %v with %d residual values", ts.Shape, len(ts.Residual))
	}
	if !finite(ts.Residual) || !finite(ts.Q) || !finite(ts.Gains) || !finite([]float64{ts.Captured, ts.ResidualNorm, ts.Energy}) {
		return nil, ErrNotFinite
	}
	st := &tensorState{shape: slices.Clone(ts.Shape), residual: slices.Clone(ts.Residual), captured: ts.Captured, residualNorm: ts.ResidualNorm,
		pending: ts.Pending, held: ts.Held}
	if e.isLowRank(ts.Shape) != ts.LowRank {
		return nil, fmt.Errorf("low-rank %v, the configuration says %v", ts.LowRank, !ts.LowRank)
	}
	if ts.Held && !ts.Pending || (ts.Pending || ts.Held) && (ts.LowRank && e.cfg.Fragments <= 1 || !ts.LowRank && e.cfg.DenseEvery <= 1) {
		return nil, fmt.Errorf("held back (pending %v, held %v) with low-rank %v, dense every %d and fragments %d", ts.Pending, ts.Held, ts.LowRank, e.cfg.DenseEvery, e.cfg.Fragments)
	}
	if !ts.LowRank {
		return st, nil
	}
	rows, cols := ts.Shape[0], ts.Shape[1]
	lo, hi := e.rankBounds(rows, cols)
	switch {
	case ts.Rank < lo || ts.Rank > hi || ts.LastRank < 0 || ts.LastRank > hi:
		return nil, fmt.Errorf("rank %d, last %d, bounds [%d, %d]", ts.Rank, ts.LastRank, lo, hi)
	case len(ts.Q) != cols*ts.Rank || len(ts.Gains) > ts.LastRank:
		return nil, fmt.Errorf("Q of %d values, %d gains, for %d × rank %d (last %d)", len(ts.Q), len(ts.Gains), cols, ts.Rank, ts.LastRank)
	}
	lr := newLowRank(rows, cols, ts.Rank, 0, ts.Name)
	if err := lr.src.UnmarshalBinary(ts.Rand); err != nil {
		return nil, fmt.Errorf("generator: %v", err)
	}
	copy(lr.q, ts.Q)
	lr.lastRank, lr.gains, lr.energy = ts.LastRank, slices.Clone(ts.Gains), ts.Energy
	st.lr = lr
	return st, nil
}
