package training

import (
	"errors"
	"fmt"
	"math"
)

// ErrState is returned (wrapped) when a saved optimizer or data state does not fit what it
// is restored into.
var ErrState = errors.New("training: saved state out of form")

// AdamWState is what AdamW keeps between steps: the step count and the first and second
// moments of every parameter (none before the first step), float32 values written as
// float64.
type AdamWState struct {
	T int         `cbor:"1,keyasint"`
	M [][]float64 `cbor:"2,keyasint"`
	V [][]float64 `cbor:"3,keyasint"`
}

// State returns a copy of the optimizer's state.
func (a *AdamW) State() AdamWState {
	st := AdamWState{T: a.t}
	for i := range a.m {
		st.M = append(st.M, widen(a.m[i]))
		st.V = append(st.V, widen(a.v[i]))
	}
	return st
}

// Moments are the optimizer's own first and second moments (nil before the first step),
// shared, not copied: valid until its next step.
func (a *AdamW) Moments() (m, v [][]float32) { return a.m, a.v }

// StepCount is the number of steps taken.
func (a *AdamW) StepCount() int { return a.t }

// SetState restores a state for the parameters ps (which it checks the moments against:
// one per parameter, of its size, finite in float32, second moments not negative). It
// copies st, rounding the moments to float32. On error (ErrState) nothing changes.
func (a *AdamW) SetState(st AdamWState, ps []*Param) error {
	if st.T < 0 || (st.T == 0) != (st.M == nil) || len(st.M) != len(st.V) || st.M != nil && len(st.M) != len(ps) {
		return fmt.Errorf("%w: step %d with moments of %d and %d parameters, for %d", ErrState, st.T, len(st.M), len(st.V), len(ps))
	}
	for i := range st.M {
		if len(st.M[i]) != len(ps[i].Data) || len(st.V[i]) != len(ps[i].Data) {
			return fmt.Errorf("%w: moments of %s: %d and %d values for %d", ErrState, ps[i].Name, len(st.M[i]), len(st.V[i]), len(ps[i].Data))
		}
		for j := range st.M[i] {
			if m, v := float32(st.M[i][j]), float32(st.V[i][j]); m-m != 0 || !(v >= 0) || math.IsInf(float64(v), 0) {
				return fmt.Errorf("%w: moments of %s: not finite", ErrState, ps[i].Name)
			}
		}
	}
	a.t, a.m, a.v = st.T, nil, nil
	for i := range st.M {
		a.m = append(a.m, narrow(st.M[i]))
		a.v = append(a.v, narrow(st.V[i]))
	}
	return nil
}

func widen(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

func narrow(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

// SetSteps sets the number of inner steps taken so far: where the schedule goes on.
func (in *Inner) SetSteps(n int) error {
	if n < 0 {
		return fmt.Errorf("%w: %d steps", ErrState, n)
	}
	in.step = n
	return nil
}

// Drawn is how many samples the Batcher has drawn: its position in its own order.
func (b *Batcher) Drawn() uint64 { return b.drawn }

// Skip draws n samples without reading them: a new Batcher of the same data, subset, size
// and seed that skips another's Drawn goes on with the same batches. It costs one shuffle of
// the subset per epoch skipped.
func (b *Batcher) Skip(n uint64) {
	for n > 0 {
		if b.pos == len(b.idx) {
			b.shuffle()
		}
		k := min(n, uint64(len(b.idx)-b.pos))
		b.pos += int(k)
		b.drawn += k
		n -= k
	}
}

// Size is the number of samples in a batch.
func (b *Batcher) Size() int { return b.size }
