package round

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/lowband/lowband/training"
	"github.com/lowband/lowband/training/aggregate"
	"github.com/lowband/lowband/training/compress"
)

// layout is the model's tensors (names and shapes; their Data is nil) and where each starts
// in the flat parameter vector.
type layout struct {
	like    []training.Tensor
	offsets map[string]int
	sizes   []int // values of each tensor of like
	size    int   // values in all
}

func newLayout(params []training.Tensor) (layout, error) {
	l := layout{offsets: map[string]int{}}
	for _, t := range params {
		if _, dup := l.offsets[t.Name]; dup || t.Name == "" {
			return layout{}, fmt.Errorf("round: tensor name %q empty or repeated", t.Name)
		}
		l.offsets[t.Name] = l.size
		l.like = append(l.like, training.Tensor{Name: t.Name, Shape: slices.Clone(t.Shape)})
		l.sizes = append(l.sizes, len(t.Data))
		l.size += len(t.Data)
	}
	return l, nil
}

// fits checks that st has this layout's tensors, in order, and a momentum of its size (or
// none).
func (l *layout) fits(st State) error {
	if len(st.Params) != len(l.like) {
		return fmt.Errorf("round: state of %d tensors, model of %d", len(st.Params), len(l.like))
	}
	for i, t := range st.Params {
		w := l.like[i]
		if t.Name != w.Name || !slices.Equal(t.Shape, w.Shape) || len(t.Data) != l.sizes[i] {
			return fmt.Errorf("round: state tensor %d is %q %v (%d values), model has %q %v", i, t.Name, t.Shape, len(t.Data), w.Name, w.Shape)
		}
	}
	if st.Momentum != nil && len(st.Momentum) != l.size {
		return fmt.Errorf("round: momentum of %d values for %d parameters", len(st.Momentum), l.size)
	}
	return nil
}

// outerOf is the outer optimizer cfg gives. With momentum 0 it keeps no momentum buffer,
// so a state holds none (and its root and checkpoint cover none), unless shared bases
// read the last aggregate from it.
func outerOf(cfg Config) training.Nesterov {
	return training.Nesterov{LR: cfg.OuterLR, Momentum: cfg.Momentum, KeepLast: cfg.Compress.SharedRank > 0}
}

// keepsMomentum refuses a state with a momentum buffer under a cfg whose outer step keeps
// none (outerOf): its root would not be the one every node computes.
func keepsMomentum(cfg Config) error {
	if o := outerOf(cfg); o.Momentum == 0 && !o.KeepLast {
		return errors.New("round: a state with a momentum buffer for an outer step without momentum")
	}
	return nil
}

// tensors cuts a copy of v, of the layout's size, into the model's tensors.
func (l *layout) tensors(v []float64) []training.Tensor {
	return l.views(slices.Clone(v))
}

// views cuts v, of the layout's size, into the model's tensors, sharing v's values.
func (l *layout) views(v []float64) []training.Tensor {
	out := make([]training.Tensor, len(l.like))
	off := 0
	for i, t := range l.like {
		out[i] = training.Tensor{Name: t.Name, Shape: slices.Clone(t.Shape), Data: v[off : off+l.sizes[i] : off+l.sizes[i]]}
		off += l.sizes[i]
	}
	return out
}

// maxNorm is the configured bound on a contribution's norm (0: none).
func maxNorm(cfg Config) float64 {
	if cfg.MaxNorm == 0 {
		return math.Inf(1)
	}
	return cfg.MaxNorm
}

// Step is what closing round st.Round with exactly these contributions and weights gives:
// the next State and the sorted lists of peers included and rejected at decode. A
// contribution counts when its peer has a positive, finite weight in weights, with that
// weight (its Weight field is not read); the others are in neither list. Contributions
// must be whole, of round st.Round and of distinct peers, in any order. It is the same
// arithmetic as CloseWith, bit for bit (CloseWith calls it), and does not modify st.
// Closed.Params is θ after the step, a copy the caller owns.
func Step(cfg Config, st State, contribs []Contribution, weights map[string]float64) (State, Closed, error) {
	lay, err := newLayout(st.Params)
	if err != nil {
		return State{}, Closed{}, err
	}
	if err := lay.fits(st); err != nil {
		return State{}, Closed{}, err
	}
	cs := slices.Clone(contribs)
	slices.SortFunc(cs, func(a, b Contribution) int { return strings.Compare(a.Peer, b.Peer) })
	for i, c := range cs {
		switch {
		case c.Round != st.Round || c.Msg == nil:
			return State{}, Closed{}, fmt.Errorf("%w: contribution of %q for round %d to close round %d", ErrInvalid, c.Peer, c.Round, st.Round)
		case i > 0 && cs[i-1].Peer == c.Peer:
			return State{}, Closed{}, fmt.Errorf("%w: peer %s, round %d", ErrDuplicate, c.Peer, c.Round)
		}
	}
	theta := training.Flatten(st.Params)
	outer := outerOf(cfg)
	if st.Momentum != nil {
		if err := keepsMomentum(cfg); err != nil {
			return State{}, Closed{}, err
		}
		outer.SetMomentumBuffer(st.Momentum)
	}
	bases, err := sharedBases(cfg, &lay, st.Momentum)
	if err != nil {
		return State{}, Closed{}, err
	}
	_, included, rejected, dropped, err := closeStep(cfg, &lay, theta, &outer, st.Round, cs, weightOf(weights), bases)
	if err != nil {
		return State{}, Closed{}, err
	}
	params, out := lay.views(theta), lay.tensors(theta)
	next := State{Round: st.Round + 1, Params: params, Momentum: slices.Clone(outer.MomentumBuffer())}
	return next, Closed{Round: st.Round, Included: included, Rejected: rejected, Dropped: dropped, Params: out}, nil
}

// weightOf reads a contribution's weight from a map: positive and finite, else 0.
func weightOf(weights map[string]float64) func(Contribution) float64 {
	return func(c Contribution) float64 {
		if w := weights[c.Peer]; w > 0 && !math.IsInf(w, 0) {
			return w
		}
		return 0
	}
}

// closeStep closes round r on theta and outer, in place: the contributions cs (sorted by
// peer) whose weight is positive are decoded, aggregated with that weight and applied by
// the outer step. It returns the total weight included, the peers included, those whose
// contribution failed to decode (or broke the norm bound) and those of the included the
// rule left out whole. With nothing included, theta and outer are left as they are.
//
// With Config.Compress.SharedRank above 0, bases are the round's shared bases
// (sharedBases of the momentum before the step), bound to every message before it is read.
func closeStep(cfg Config, lay *layout, theta []float64, outer *training.Nesterov, r uint64, cs []Contribution, weight func(Contribution) float64, bases compress.Bases) (total float64, included, rejected, dropped []string, err error) {
	var in []aggregate.Source
	buf := make([]float64, min(lay.size, checkChunk))
	due := cfg.Compress.Due(r, lay.shapeList()) // a tensor not due in r is zero in every input
	for _, c := range cs {
		w := weight(c)
		if !(w > 0) {
			continue
		}
		begin(cfg.Meter, PhaseDecode)
		msg, berr := c.Msg, error(nil)
		if cfg.Compress.SharedRank > 0 {
			msg, berr = c.Msg.WithBases(bases)
		}
		var rd *compress.RangeReader
		if berr == nil {
			rd, berr = lay.reader(msg, maxNorm(cfg), buf, due)
		}
		end(cfg.Meter, PhaseDecode)
		if berr != nil {
			rejected = append(rejected, c.Peer)
			continue
		}
		included = append(included, c.Peer)
		in = append(in, aggregate.Source{ID: c.Peer, Weight: w, Read: rd.Read})
		total += w
	}
	if len(in) == 0 {
		return 0, included, rejected, nil, nil
	}
	// The outer step takes the aggregate a range at a time, as the rule makes it, so that
	// the close never holds it whole: theta and outer are the close's own copies, which
	// the caller drops on an error.
	var stepErr error
	begin(cfg.Meter, PhaseAggregate)
	dropped, err = aggregate.AggregateStreamTo(cfg.Aggregate, lay.size, in, func(lo int, g []float64) error {
		end(cfg.Meter, PhaseAggregate)
		begin(cfg.Meter, PhaseOuter)
		stepErr = outer.StepAt(theta, lo, g)
		end(cfg.Meter, PhaseOuter)
		begin(cfg.Meter, PhaseAggregate)
		return stepErr
	})
	end(cfg.Meter, PhaseAggregate)
	switch {
	case stepErr != nil:
		return 0, nil, nil, nil, fmt.Errorf("round: outer step of round %d: %w", r, stepErr)
	case err != nil:
		return 0, nil, nil, nil, fmt.Errorf("round: aggregating round %d: %w", r, err)
	}
	return total, included, rejected, dropped, nil
}

// checkChunk is how many values of a contribution reader checks at a time.
const checkChunk = 1 << 16

// shapeList is the tensors' shapes in the model's order.
func (l *layout) shapeList() [][]int {
	out := make([][]int, len(l.like))
	for i, t := range l.like {
		out[i] = t.Shape
	}
	return out
}

// reader checks that msg decodes into the model's tensors, every tensor due in the round
// (due nil: all) present exactly once with its shape and every other one absent (its
// values are zero), every value finite and the L2 norm at most bound (summed in coordinate
// order, as over the whole vector), reading it a range at a time into buf (unless its
// factors alone show that it passes: compress.Message.SurelyWithinNorm), and returns a
// reader of its values in the model's parameter order. The aggregation reads the
// contribution again from it, range by range: no contribution is ever held decoded whole.
func (l *layout) reader(msg *compress.Message, bound float64, buf []float64, due []bool) (*compress.RangeReader, error) {
	like := make([]compress.Tensor, len(l.like))
	for i, t := range l.like {
		like[i] = compress.Tensor{Name: t.Name, Shape: t.Shape}
	}
	rd, err := msg.NewRangeReaderDue(like, due)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if msg.SurelyWithinNorm(bound) { // the factors show that the check would pass
		return rd, nil
	}
	ss := 0.0
	for lo := 0; lo < l.size; lo += len(buf) {
		hi := min(lo+len(buf), l.size)
		vals := buf[:hi-lo]
		if err := rd.Read(lo, hi, vals); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		for _, v := range vals {
			ss += float64(v * v)
		}
	}
	if !math.IsInf(bound, 1) && !(math.Sqrt(ss) <= bound) {
		return nil, fmt.Errorf("%w: norm %g over %g", ErrInvalid, math.Sqrt(ss), bound)
	}
	return rd, nil
}

// sharedBases is the shared bases of the round that closes on a state with this outer
// momentum buffer (compress.DeriveBases of it, read as the model's tensors): with momentum
// 0 the buffer is the last round's aggregate, else its moving sum, in both cases a pure
// function of the state every node agrees on. None without Config.Compress.SharedRank or
// before the first outer step.
func sharedBases(cfg Config, lay *layout, momentum []float64) (compress.Bases, error) {
	if cfg.Compress.SharedRank == 0 || len(momentum) != lay.size {
		return nil, nil
	}
	ts := make([]compress.Tensor, len(lay.like))
	for i, t := range lay.views(momentum) {
		ts[i] = compress.Tensor(t)
	}
	b, err := compress.DeriveBases(cfg.Compress, ts)
	if err != nil {
		return nil, fmt.Errorf("round: shared bases: %w", err)
	}
	return b, nil
}
