package node

import (
	"context"
	"crypto/ed25519"
	crand "crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/node/attest"
	"github.com/lowband/lowband/node/core"
	"github.com/lowband/lowband/p2p"
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

// startTraining builds the node's training before its host starts (the validators feed the
// loop from the first message): the loop's edges reach the host through n once it exists.
func (n *Node) startTraining(key crypto.PrivKey, reg prometheus.Registerer) error {
	id, err := peer.IDFromPrivateKey(key)
	if err != nil {
		return err
	}
	prod, err := attest.NewProducer(n.opts.Config.Attest, n.opts.Home.Dir)
	if err != nil {
		return fmt.Errorf("attestation producer: %w", err)
	}
	deps := loopDeps{
		commit:  n.ledger.commit,
		publish: func(ctx context.Context, kind string, data []byte) error { return n.host.Publish(ctx, kind, data) },
		attest: func(ctx context.Context, epoch uint64) (core.Signer, error) {
			return attestEpoch(ctx, prod, n.opts.Spec, key, epoch, n.host)
		},
	}
	g := gauges{
		bandwidth: func() (int64, int64) { return n.host.Bandwidth() },
		verifyCPU: func() time.Duration { return 0 },
		stash:     func() int { return 0 },
	}
	n.train, err = newTraining(n.opts.Spec, n.opts.Config, id.String(), n.ledger.state.Load(), realClock{}, deps, g, n.log, reg)
	return err
}

// attestEpoch makes the node's bundle for an epoch with a fresh ephemeral key and
// publishes it on the attest topic.
func attestEpoch(ctx context.Context, prod attest.Producer, s *configs.Spec, key crypto.PrivKey, epoch uint64, h *p2p.Host) (core.Signer, error) {
	pub, priv, err := ed25519.GenerateKey(crand.Reader)
	if err != nil {
		return core.Signer{}, err
	}
	b, err := attest.Attest(ctx, prod, s.NetworkID(), s.Run, key, epoch, pub)
	if err != nil {
		return core.Signer{}, err
	}
	data, err := b.Marshal()
	if err != nil {
		return core.Signer{}, err
	}
	if err := h.Publish(ctx, p2p.KindAttest, data); err != nil {
		return core.Signer{}, fmt.Errorf("publishing the bundle of epoch %d: %w", epoch, err)
	}
	return core.Signer{Key: priv, Bundle: data, BundleHash: b.Hash()}, nil
}

// subscribe joins the topics the node needs as a subscriber, so that gossipsub puts it in
// their meshes. What they deliver has passed the validators, which fed the loop already:
// the subscriptions are drained until ctx ends.
func (n *Node) subscribe(ctx context.Context) error {
	for _, kind := range p2p.Kinds {
		sub, err := n.host.Subscribe(kind)
		if err != nil {
			return err
		}
		go func() {
			defer sub.Cancel()
			for {
				if _, err := sub.Next(ctx); err != nil {
					return
				}
			}
		}()
	}
	return nil
}
