package node

import (
	"errors"
	"fmt"
	"io"

	"github.com/lowband/lowband/training"
	"github.com/lowband/lowband/training/round"
)

// localVersion is the version of the local state encoding (localstate_wire.go). Version
// 1, CBOR lists of floats, is no longer read: a node restarted on it trains on without it.
const localVersion = 2

// ErrLocalState: a saved local state that does not decode, is of another version or is
// larger than any this model makes.
var ErrLocalState = errors.New("saved local state out of form")

// localState is what this node keeps between rounds that no root covers: the round
// machine's (codec residuals, warm starts and ranks, the eager start's own
// pseudo-gradient), the inner optimizer's moments and step, and its position in its own
// data order. It is taken at a commit, when no local work is under way, and saved with the
// checkpoint of that round, or in its own file beside the store; a restart restores it, so that
// the node trains on from where it stopped. Peers never see it.
type localState struct {
	Version uint8
	// Round is the first open round when it was taken.
	Round     uint64
	Machine   round.LocalState
	Optimizer training.AdamWState
	Steps     uint64 // inner steps taken
	Drawn     uint64 // samples drawn from the node's data order
	// m32 and v32, when set, are the optimizer's own float32 moments, encoded in place of
	// Optimizer's (a save encoded on the loop, which copies nothing it can read in place).
	m32, v32 [][]float32
}

// maxLocalBytes bounds the encoding of a local state of a model of n values: at most five
// vectors of the model's size (residuals, warm starts, own pseudo-gradient, two moments)
// of 8 bytes a value, and room for gains, names and shapes.
func maxLocalBytes(n int) int { return 5*8*n + 1<<20 }

var (
	localEnc = detEncMode()
	localDec = strictDecMode(8, 5*maxLocalTensors) // the header's lists; the total size is checked first
)

// local is the trainer's part of the local state: the optimizer, the inner steps and the
// data position. Call it only while no local work is under way (the loop holds the
// trainer's last result and has not started the next).
func (t *trainer) local(ls *localState) {
	if o, ok := t.inner.Opt.(*training.AdamW); ok {
		ls.Optimizer = o.State()
	}
	ls.Steps, ls.Drawn = uint64(t.inner.Steps()), t.batch.Drawn()
}

// restore restores the trainer's part of ls, before it runs: at most maxSteps inner steps,
// one batch drawn per step; nothing changes on error.
func (t *trainer) restore(ls *localState, maxSteps uint64) error {
	o, ok := t.inner.Opt.(*training.AdamW)
	switch {
	case !ok:
		return fmt.Errorf("%w: the inner optimizer keeps no state", ErrLocalState)
	case ls.Steps > maxSteps || ls.Drawn/uint64(t.batch.Size()) != ls.Steps || ls.Drawn%uint64(t.batch.Size()) != 0:
		return fmt.Errorf("%w: %d inner steps (at most %d here), %d samples drawn", ErrLocalState, ls.Steps, maxSteps, ls.Drawn)
	}
	if err := o.SetState(ls.Optimizer, t.inner.Model.Params()); err != nil {
		return err
	}
	if err := t.inner.SetSteps(int(ls.Steps)); err != nil {
		return err
	}
	t.batch.Skip(ls.Drawn)
	return nil
}

// takeLocal is the node's local state now that round is the first open one. The loop
// calls it at a commit, when no local work is under way.
func (l *loop) takeLocal(round uint64) *localState {
	ls := &localState{Round: round, Machine: l.core.Local()}
	l.train.local(ls)
	return ls
}

// writeLocal writes the encoding of the node's local state now that round is the first
// open one to w, read in place where it can be (the own pseudo-gradient, the optimizer's
// moments: only the codec's state is copied), so that a save holds little more than the
// state. The loop calls it at a commit, when no local work is under way, and nothing
// changes the state until it returns.
func (l *loop) writeLocal(round uint64, w io.Writer) error {
	ls := &localState{Round: round, Machine: l.core.LocalShared()}
	ls.Steps, ls.Drawn = uint64(l.train.inner.Steps()), l.train.batch.Drawn()
	if o, ok := l.train.inner.Opt.(*training.AdamW); ok {
		ls.Optimizer.T = o.StepCount()
		ls.m32, ls.v32 = o.Moments()
	}
	_, err := ls.writeTo(func(int) io.Writer { return w })
	return err
}
