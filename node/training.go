package node

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/node/core"
	"github.com/lowband/lowband/training"
	"github.com/lowband/lowband/training/round"
)

// ErrNoModelState is returned when the store's ledger is past round 0: the node keeps no
// model state yet, so it cannot resume a run it trained in before.
var ErrNoModelState = errors.New("the ledger is past round 0 and no model state is saved: a node cannot resume a run yet; start from a fresh home (lowband init --force)")

// newCore builds the node's round decisions from the network's params, resuming at st with
// the ledger state led.
func newCore(p *Params, s *configs.Spec, self string, st round.State, led *incentives.State) (*core.Core, error) {
	if led.Round != st.Round {
		if st.Round == 0 {
			return nil, fmt.Errorf("ledger at round %d: %w", led.Round, ErrNoModelState)
		}
		return nil, fmt.Errorf("ledger at round %d, model at round %d", led.Round, st.Round)
	}
	return core.New(core.Config{
		Self: self, Network: s.NetworkID(), Run: s.Run,
		Round: p.RoundConfig(self, 1), Deadline: p.Deadline, Checker: p.Checker, Limits: p.Limits,
	}, st, led)
}

// trainingParts are what a training node adds to a bootstrap node.
type trainingParts struct {
	params  *Params
	initial round.State
	loop    *loop
	prog    *progress
}

// newTraining builds the node's training: data, trainer, evaluator, core, progress and the
// loop, from the spec and the ledger state led. deps are the loop's edges; g the gauges
// progress reads (inbox depth is the loop's own).
func newTraining(s *configs.Spec, cfg *configs.Config, self string, led *incentives.State, clk clock, deps loopDeps, g gauges, log *slog.Logger, reg prometheus.Registerer) (*trainingParts, error) {
	p, err := NewParams(s)
	if err != nil {
		return nil, fmt.Errorf("network spec: %w", err)
	}
	st, err := p.Initial()
	if err != nil {
		return nil, err
	}
	c, err := newCore(p, s, self, st, led)
	if err != nil {
		return nil, err
	}
	d, err := loadData(p, cfg.Training.Data, self)
	if err != nil {
		return nil, err
	}
	tr, err := newTrainer(p, d, self)
	if err != nil {
		return nil, err
	}
	ev, err := newEvaluator(p, d)
	if err != nil {
		return nil, err
	}
	var l *loop
	g.inbox = func() int { return l.inboxDepth() }
	prog, err := newProgress(log, reg, g, TrainingStatus{
		Task: p.Training.Task, Attestation: cfg.Attest.Producer, Insecure: cfg.Attest.Producer == configs.KindSim,
		DenseBytesPerRound: denseBytes(st.Params),
	})
	if err != nil {
		return nil, err
	}
	l = newLoop(c, clk, deps, log, prog, tr, ev)
	return &trainingParts{params: p, initial: st, loop: l, prog: prog}, nil
}

// denseBytes is the size of one dense fp32 pseudo-gradient of ts: 4 bytes a parameter.
func denseBytes(ts []training.Tensor) int64 {
	var n int64
	for _, t := range ts {
		n += int64(len(t.Data))
	}
	return 4 * n
}
