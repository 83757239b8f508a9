package node

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"

	"github.com/lowband/lowband/node/core"
	"github.com/lowband/lowband/training"
	"github.com/lowband/lowband/training/round"
)

// localDone is the end of one round's local work: the parameters after H inner steps from
// the round's start, and the mean training loss. err is set when the work failed.
type localDone struct {
	round  uint64
	params []training.Tensor
	loss   float64
	err    error
}

// evalResult is the held-out loss of θ after closing round (initial: of θ_0).
type evalResult struct {
	round   uint64
	initial bool
	loss    float64
	err     error
}

// NewInner is the spec's inner optimizer on m: AdamW with its weight decay, gradient
// clipping and the warmup + cosine schedule, which continues across rounds.
func (p *Params) NewInner(m training.Model) *training.Inner {
	in := p.Training.Inner
	return &training.Inner{
		Model:    m,
		Opt:      training.NewAdamW(in.WeightDecay),
		Schedule: training.Schedule{Peak: in.LR, Min: in.MinLR, Warmup: in.Warmup, Total: in.TotalSteps},
		Clip:     in.Clip,
	}
}

// trainer runs the node's local work in its own goroutine: H inner steps from the
// parameters of each round.Start it is given, reported on done. It never waits on the
// network; the loop gives it one start at a time.
type trainer struct {
	inner  *training.Inner
	batch  *training.Batcher
	h      int
	starts chan round.Start
	// tamper, when set, changes the parameters a round's work hands back (adversary modes).
	tamper func(s round.Start, local []training.Tensor) ([]training.Tensor, error)
	// compute, when set, is taken around each inner step (Options.Compute).
	compute func() (release func())

	// A merging close (round.Config.Merge) moves the base of the work under way; the loop
	// hands the move over with shift, and the work adds it to its parameters before its
	// next inner step.
	mu      sync.Mutex
	current uint64 // round of the work under way, or of the last one
	ended   bool   // the work of round current has ended
	pending *core.Shift
}

// shift hands the trainer the move of round r's work, to add to its parameters before its
// next inner step (or as it begins, when it has not yet). It returns false when the work of
// round r has ended already: the caller then adds the move to the parameters that work
// reported.
func (t *trainer) shift(s *core.Shift) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s.Round < t.current || s.Round == t.current && t.ended {
		return false
	}
	t.pending = s
	return true
}

// takeShift adds to params the move handed over for round r, if any; with end, the work of
// round r has ended once it returns (in the same critical section, so that a shift handed
// over after this take is refused, never left pending).
func (t *trainer) takeShift(r uint64, params, start []training.Tensor, end bool) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if end {
		t.ended = true
	}
	s := t.pending
	if s == nil || s.Round != r {
		return nil
	}
	t.pending = nil
	if err := training.AddTo(params, s.Params); err != nil {
		return err
	}
	if start != nil { // the adversary's copy of the start moves with the work
		return training.AddTo(start, s.Params)
	}
	return nil
}

// forgetShifts drops what the trainer knows of shifts, for a stopped loop (drain): the
// work it was running is abandoned, and a move of it must not reach later work.
func (t *trainer) forgetShifts() {
	t.mu.Lock()
	t.pending, t.ended = nil, true
	t.mu.Unlock()
}

// newTrainer builds the node's model, inner optimizer and batches over its slice. The
// batch order is the node's own (seeded by the spec's seed and its peer ID).
func newTrainer(p *Params, d *taskData, self string) (*trainer, error) {
	m, err := p.NewModel()
	if err != nil {
		return nil, err
	}
	b, err := training.NewBatcher(d.train, d.slice, p.Training.BatchSize, privateSeed(p.Training.Seed, self))
	if err != nil {
		return nil, fmt.Errorf("batches of the node's slice: %w", err)
	}
	return &trainer{inner: p.NewInner(m), batch: b, h: p.Training.InnerSteps, starts: make(chan round.Start, 1)}, nil
}

// privateSeed derives a node's own seed from the spec's seed and its peer ID.
func privateSeed(seed uint64, self string) uint64 {
	h := sha256.New()
	_ = binary.Write(h, binary.BigEndian, seed)
	h.Write([]byte(self))
	return binary.BigEndian.Uint64(h.Sum(nil))
}

// start hands the next local work to the trainer. It never blocks: the round machine
// starts one local work at a time, so a start while another is queued is an error.
func (t *trainer) start(s round.Start) error {
	select {
	case t.starts <- s:
		return nil
	default:
		return fmt.Errorf("local work for round %d started while another is queued", s.Round)
	}
}

// run trains until ctx ends: for each start, H inner steps, reported on done.
func (t *trainer) run(ctx context.Context, done chan<- localDone) {
	for {
		select {
		case <-ctx.Done():
			return
		case s := <-t.starts:
			out := t.work(ctx, s)
			if ctx.Err() != nil {
				return
			}
			select {
			case done <- out:
			case <-ctx.Done():
				return
			}
		}
	}
}

// work runs H inner steps from s.Params, checking ctx between steps.
func (t *trainer) work(ctx context.Context, s round.Start) localDone {
	out := localDone{round: s.Round}
	start := s
	if t.tamper != nil { // it reads the start after the work, which trains s.Params in place
		start.Params = make([]training.Tensor, len(s.Params))
		for i, p := range s.Params {
			start.Params[i] = training.Tensor{Name: p.Name, Shape: p.Shape, Data: slices.Clone(p.Data)}
		}
	}
	// The start's parameters are handed over: the model trains them in place and hands
	// them back, so that a round's work copies θ nowhere.
	if out.err = training.Adopt(t.inner.Model.Params(), s.Params); out.err != nil {
		return out
	}
	t.mu.Lock()
	t.current, t.ended = s.Round, false
	t.mu.Unlock()
	params := training.Views(t.inner.Model.Params())
	var moved []training.Tensor // the adversary's copy of the start, which a shift moves too
	if t.tamper != nil {
		moved = start.Params
	}
	total := 0.0
	for i := 0; i < t.h && ctx.Err() == nil; i++ {
		if out.err = t.takeShift(s.Round, params, moved, false); out.err != nil {
			return out
		}
		loss, err := t.step()
		if err != nil {
			out.err = fmt.Errorf("inner step %d of round %d: %w", i, s.Round, err)
			return out
		}
		total += loss
	}
	if out.err = t.takeShift(s.Round, params, moved, true); out.err != nil {
		return out
	}
	out.loss = total / float64(t.h)
	out.params = params // the next start's values replace them
	if t.tamper != nil {
		out.params, out.err = t.tamper(start, out.params)
	}
	return out
}

// step runs one inner step, holding compute (Options.Compute) while it does.
func (t *trainer) step() (float64, error) {
	if t.compute != nil {
		defer t.compute()()
	}
	return t.inner.Run(t.batch, 1)
}

// evaluator scores θ on the held-out batch with its own model, off the loop goroutine. The
// model holds no parameters of its own: it reads each job's, which it only reads.
type evaluator struct {
	model   training.Model
	batch   training.Batch
	jobs    chan evalJob
	compute func() (release func()) // taken around each evaluation (Options.Compute)
}

type evalJob struct {
	round   uint64
	initial bool
	params  []training.Tensor
}

// evalQueue bounds the rounds waiting for evaluation; past it a round goes unscored.
const evalQueue = 8

func newEvaluator(p *Params, d *taskData) (*evaluator, error) {
	m, err := p.NewModel()
	if err != nil {
		return nil, err
	}
	release(m)
	return &evaluator{model: m, batch: d.eval, jobs: make(chan evalJob, evalQueue)}, nil
}

// release drops an evaluating model's parameters and gradients: it evaluates each job's
// parameters in place (training.Adopt) and never takes a gradient.
func release(m training.Model) {
	for _, p := range m.Params() {
		p.Data, p.Grad = nil, nil
	}
}

// submit queues θ of a round for evaluation; false when the queue is full.
func (e *evaluator) submit(j evalJob) bool {
	select {
	case e.jobs <- j:
		return true
	default:
		return false
	}
}

// run evaluates queued jobs until ctx ends, reporting each on out.
func (e *evaluator) run(ctx context.Context, out chan<- evalResult) {
	for {
		select {
		case <-ctx.Done():
			return
		case j := <-e.jobs:
			r := evalResult{round: j.round, initial: j.initial}
			if r.err = training.Adopt(e.model.Params(), j.params); r.err == nil {
				r.loss, r.err = e.eval()
			}
			release(e.model)
			select {
			case out <- r:
			case <-ctx.Done():
				return
			}
		}
	}
}

// eval scores the adopted parameters, holding compute (Options.Compute) while it does.
func (e *evaluator) eval() (float64, error) {
	if e.compute != nil {
		defer e.compute()()
	}
	loss, _, err := e.model.Eval(e.batch)
	return loss, err
}
