package node

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/node/core"
	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/training"
	"github.com/lowband/lowband/training/round"
)

// Sizes of the round loop.
const (
	// inboxSize bounds the verified events waiting for the loop; a validator that finds
	// the inbox full answers Ignore.
	inboxSize = 4096
	// tickInterval is how often the loop asks the core whether a round may close.
	tickInterval = 100 * time.Millisecond
	// republishEvery is how many closed rounds apart the node republishes its bundle, for
	// peers that joined after it (republishes). A peer that lacks the bundle of a shard
	// it receives fetches it from the forwarder (the shard waits in the stash), so this is
	// the second way a bundle reaches a newcomer, not the first: every 10 rounds, the
	// bundles of a swarm of 16 were 1.7 KB of each node's 120 KB a round.
	republishEvery = 50
)

// loopDeps are the loop's edges: everything it does outside the core. Each is called from
// the loop's goroutine only.
type loopDeps struct {
	// commit persists a closed round (ledger.commit).
	commit func(*core.Commit) error
	// repair persists closed rounds closed again (Node.repairRounds; nil: a repair stops the
	// loop with an error).
	repair func(*core.Repair) error
	// publish sends a message on the topic of kind.
	publish func(ctx context.Context, kind string, data []byte) error
	// fetch asks peers for missing shard slots; it must not block, and what it gets goes
	// through the validators into the inbox (nil: no fetching).
	fetch func(ctx context.Context, wants []core.Want)
	// attest makes, registers and publishes the node's bundle of an epoch, and returns its
	// signer; with an error, the signer is usable if it has a key (the publish failed).
	attest func(ctx context.Context, epoch uint64) (core.Signer, error)
	// view tells the validators the core's view after each event (nil: nobody).
	view func(core.View)
	// ready reports whether every genesis peer is there to train with (on the shards
	// topic, or found advertised). The first local work waits for it, at most startWait,
	// so that round 0 starts together (nil: start at once).
	ready func(ctx context.Context) bool
	// absent names the genesis peers missing, for the log; nil: not known.
	absent func() []string
	// save saves the node's local state now that round is the first open one
	// (Node.saveLocal; nil: none): a save a commit asked for during local work.
	save func(round uint64)
}

// loop is the node's round loop: the only goroutine that touches the core. It selects on
// the inbox (verified shards and evidence), the trainer's local work, the evaluator's
// results and a ticker, and applies each Ready in order: commit, publish, fetch, train,
// progress. Validators read the core's View through an atomic pointer.
type loop struct {
	core  *core.Core
	clk   clock
	deps  loopDeps
	log   *slog.Logger
	prog  *progress
	train *trainer
	eval  *evaluator

	inbox     chan any // shardIn, evidenceIn or recordIn; filled by the validators
	done      chan localDone
	evals     chan evalResult
	view      atomic.Pointer[core.View]
	agreement atomic.Pointer[core.Agreement] // the core's after the last event
	agreeMet  *agreementMetrics              // nil: none
	votes     voteBook                       // roots named by the records taken, for GET /agreement
	fetched   map[slot]struct{}              // shards fetched by CID for the pending repair
	// sent is when the loop handed its own contribution to a round to gossip: the core
	// encodes and signs it in LocalDone, which under load takes seconds. Only the loop's
	// goroutine touches it; a round's entry goes when the round is reported.
	sent map[uint64]time.Time
	// lateShift is a merging close's move of local work that had ended when it came: it
	// is added to what that work reports (core.Ready.Shift).
	lateShift *core.Shift
	// working is true from a start handed to the trainer until its work is reported: the
	// trainer then owns the optimizer and batch state. saveDue is the round of a local
	// state save that came while it was (0: none), made once the work has been reported.
	working   bool
	saveDue   uint64
	ckpt      *checkpointer // makes the checkpoints off the loop (nil: none)
	startWait time.Duration // longest wait for the genesis peers before round 0
	epoch     uint64        // epoch of the signer in use
	bundle    []byte        // its bundle, republished for late joiners
}

func newLoop(c *core.Core, clk clock, deps loopDeps, log *slog.Logger, prog *progress, tr *trainer, ev *evaluator) *loop {
	l := &loop{core: c, clk: clk, deps: deps, log: log, prog: prog, train: tr, eval: ev,
		inbox: make(chan any, inboxSize), done: make(chan localDone), evals: make(chan evalResult, evalQueue)}
	// The validators judge shards by the view from now on: a node waiting for its
	// genesis peers or joining takes the shards of the rounds its peers already work on.
	l.setView()
	return l
}

// setView publishes the core's view to the validators, and its agreement to the API.
func (l *loop) setView() {
	v, a := l.core.View(), l.core.Agreement()
	l.view.Store(&v)
	l.agreement.Store(&a)
	if l.deps.view != nil {
		l.deps.view(v)
	}
}

// View is the core's view after the last event. Safe for concurrent use.
func (l *loop) View() core.View { return *l.view.Load() }

// deliver hands a verified event (shardIn, evidenceIn, recordIn) to the loop without blocking; false
// when the inbox is full. Safe for concurrent use.
func (l *loop) deliver(ev any) bool {
	select {
	case l.inbox <- ev:
		return true
	default:
		return false
	}
}

// inboxDepth is how many events wait for the loop. Safe for concurrent use.
func (l *loop) inboxDepth() int { return len(l.inbox) }

// run drives the rounds until ctx ends. It returns nil when ctx ends, or the error that
// stopped it (a store that cannot commit, local work or a close that failed), once the
// trainer and the evaluator have stopped.
func (l *loop) run(ctx context.Context, initial round.State) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Add(2)
	go func() { defer wg.Done(); l.train.run(ctx, l.done) }()
	go func() { defer wg.Done(); l.eval.run(ctx, l.evals) }()
	if l.ckpt != nil {
		wg.Add(1)
		go func() { defer wg.Done(); l.ckpt.run(ctx) }()
	}
	if initial.Params != nil { // nil: run again on the state the last run left (a resync that did not move)
		l.eval.submit(evalJob{initial: true, params: initial.Params})
	}
	t := l.clk.NewTicker(tickInterval)
	defer t.Stop()
	if l.View().NextClose == 0 { // round 0 starts together; a restart or a join does not wait
		if l.waitForPeers(ctx, t); ctx.Err() != nil {
			return nil
		}
	}
	err := l.setSigner(ctx, l.View().Epoch)
	var rd core.Ready
	if err == nil {
		rd, err = l.core.Start(l.clk.Now())
	}
	for err == nil {
		if err = l.apply(ctx, rd); err == nil {
			rd, err = l.next(ctx, t)
		}
	}
	if ctx.Err() != nil { // stopping: what failed meanwhile failed for that
		return nil
	}
	return err
}

// errStopped ends the loop when its context ends.
var errStopped = errors.New("round loop stopped")

// next waits for the next event and gives it to the core.
func (l *loop) next(ctx context.Context, t ticker) (core.Ready, error) {
	for {
		select {
		case <-ctx.Done():
			return core.Ready{}, errStopped
		case ev := <-l.inbox:
			return l.handle(ev)
		case d := <-l.done:
			l.working = false
			if d.err != nil {
				return core.Ready{}, fmt.Errorf("local work of round %d: %w", d.round, d.err)
			}
			if s := l.lateShift; s != nil && s.Round <= d.round {
				l.lateShift = nil
				if s.Round == d.round {
					if err := training.AddTo(d.params, s.Params); err != nil {
						return core.Ready{}, fmt.Errorf("local work of round %d: %w", d.round, err)
					}
				}
			}
			rd, err := l.core.LocalDone(l.clk.Now(), d.round, d.params)
			if err == nil && len(rd.Publish) > 0 {
				if l.sent == nil {
					l.sent = map[uint64]time.Time{}
				}
				l.sent[d.round] = l.clk.Now() // published next, in apply
			}
			return rd, err
		case e := <-l.evals:
			l.prog.evaluated(e)
		case now := <-t.C():
			return l.core.Tick(now)
		}
	}
}

// waitForPeers waits, tick by tick, until every genesis peer is there or startWait has
// passed. Evaluations are reported meanwhile; the inbox waits.
func (l *loop) waitForPeers(ctx context.Context, t ticker) {
	if l.deps.ready == nil || l.deps.ready(ctx) {
		return
	}
	l.log.Info("waiting for the genesis peers", "at_most", l.startWait)
	until := l.clk.Now().Add(l.startWait)
	for !l.deps.ready(ctx) {
		select {
		case <-ctx.Done():
			return
		case e := <-l.evals:
			l.prog.evaluated(e)
		case now := <-t.C():
			if !now.Before(until) {
				var absent []string
				if l.deps.absent != nil {
					absent = l.deps.absent()
				}
				l.log.Info("starting without every genesis peer", "absent", absent)
				return
			}
		}
	}
}

// handle gives a verified event to the core. A shard the core does not take (a duplicate,
// a round closed meanwhile) is dropped: it is logged, not an error of the loop.
func (l *loop) handle(ev any) (core.Ready, error) {
	switch e := ev.(type) {
	case shardIn:
		if e.repair {
			l.fetchedForRepair(e.shard)
			l.log.Debug("shard for a repair", "round", e.shard.Header.Round, "peer", e.shard.Header.Peer, "index", e.shard.Header.Index)
		}
		rd, err := l.core.Shard(e.at, e.shard, e.bundle)
		if err != nil {
			l.log.Debug("shard not taken", "round", e.shard.Header.Round, "peer", e.shard.Header.Peer, "err", err)
			return core.Ready{}, nil
		}
		l.log.Debug("shard taken", "round", e.shard.Header.Round, "peer", e.shard.Header.Peer, "index", e.shard.Header.Index,
			"checked_at", e.at.UTC().Format(timeMS), "queued_s", l.clk.Now().Sub(e.at).Seconds())
		return rd, nil
	case evidenceIn:
		rd, err := l.core.Evidence(e.ev)
		if err != nil { // record equivocation evidence decided a round again, and failed
			l.log.Warn("repair failed", "evidence", e.ev.ID().String(), "err", err)
			return core.Ready{}, nil
		}
		return rd, nil
	case recordIn:
		return l.record(e)
	}
	return core.Ready{}, fmt.Errorf("round loop: unknown event %T", ev)
}

// apply does what a Ready asks, in order: persist (a repair, then a commit), publish,
// fetch, train, report.
func (l *loop) apply(ctx context.Context, rd core.Ready) error {
	if rd.Repair != nil {
		if err := l.persistRepair(rd.Repair); err != nil {
			return err
		}
		if rd.Commit == nil { // the core holds the repaired head: its checkpoint, if due
			l.checkpoint(rd.Repair.Commits[len(rd.Repair.Commits)-1])
		}
	}
	if rd.Commit != nil {
		if err := l.deps.commit(rd.Commit); err != nil {
			return err
		}
		l.checkpoint(rd.Commit)
	}
	for _, m := range rd.Publish {
		if err := l.deps.publish(ctx, m.Kind, m.Data); err != nil && ctx.Err() == nil {
			l.log.Warn("publishing", "kind", m.Kind, "bytes", len(m.Data), "err", err)
		}
	}
	if len(rd.Fetch) > 0 && l.deps.fetch != nil {
		l.deps.fetch(ctx, rd.Fetch)
	}
	l.prog.late(rd.Late)
	if rd.Shift != nil {
		l.prog.merged()
		if !l.train.shift(rd.Shift) {
			l.lateShift = rd.Shift
		}
	}
	if r := l.saveDue; r != 0 && !l.working { // the work has been reported; the next not started
		l.saveDue = 0
		if l.deps.save != nil {
			l.deps.save(r)
		}
	}
	if rd.Train != nil {
		if err := l.train.start(*rd.Train); err != nil {
			return err
		}
		l.working = true
	}
	if rd.Summary != nil {
		l.closed(ctx, rd.Summary, rd.Commit)
	}
	l.setView()
	if v := l.View(); v.Epoch != l.epoch {
		return l.setSigner(ctx, v.Epoch)
	}
	return nil
}

// setSigner attests the node for epoch and gives the core the new signer.
func (l *loop) setSigner(ctx context.Context, epoch uint64) error {
	s, err := l.deps.attest(ctx, epoch)
	if err != nil && len(s.Key) == 0 {
		return fmt.Errorf("attesting for epoch %d: %w", epoch, err)
	}
	if err != nil {
		l.log.Warn("attestation", "epoch", epoch, "err", err)
	}
	l.core.SetSigner(s)
	l.bundle = s.Bundle
	l.epoch = epoch
	l.prog.setEpoch(epoch)
	return nil
}

// closed reports a closed round and has θ scored off the loop.
func (l *loop) closed(ctx context.Context, s *core.Summary, c *core.Commit) {
	scored := l.eval.submit(evalJob{round: s.Round, params: s.Params})
	st := roundStatus(s, l.clk.Now())
	if t, ok := l.sent[s.Round]; ok {
		st.SentAt = t.UTC().Format(timeMS)
	}
	for r := range l.sent {
		if r <= s.Round {
			delete(l.sent, r)
		}
	}
	l.prog.roundClosed(st, slashedIn(c), scored)
	if republishes(l.bundle, s.Round) {
		if err := l.deps.publish(ctx, p2p.KindAttest, l.bundle); err != nil && ctx.Err() == nil {
			l.log.Warn("republishing the bundle", "err", err)
		}
	}
}

// republishes reports whether a node whose bundle is bundle republishes it once round
// closes: one round in republishEvery, which of them set by the bundle's hash, so that the
// swarm's bundles do not all go out in one round. (They did: 16 nodes republishing at
// once received 93 duplicate bundles each, 45 KB a node, the gossip hold overwhelmed.)
func republishes(bundle []byte, round uint64) bool {
	h := sha256.Sum256(bundle)
	return (round+uint64(h[0]))%republishEvery == republishEvery-1
}

// roundStatus is a closed round as progress reports it (wire bytes are filled there).
func roundStatus(s *core.Summary, now time.Time) RoundStatus {
	included := s.Included
	if included == nil {
		included = []string{}
	}
	rejected := s.Rejected
	if rejected == nil {
		rejected = map[string]int{}
	}
	return RoundStatus{
		Round: s.Round, Included: included, Filtered: s.Filtered, Rejected: rejected, Evidence: s.Evidence,
		ContributionBytes: s.ContributionBytes, StallS: s.Stall.Seconds(), HeldS: s.Held.Seconds(), DeadlineS: s.Deadline.Seconds(),
		Ranks: s.Ranks, StateRoot: hexRoot(s.StateRoot), LedgerRoot: hexRoot(s.LedgerRoot),
		ClosedAt: now.UTC().Format(timeMS),
	}
}

// timeMS is RFC 3339 to the millisecond: the date-time form browsers parse too.
const timeMS = "2006-01-02T15:04:05.000Z07:00"

// slashedIn lists the peers a commit penalised.
func slashedIn(c *core.Commit) []string {
	if c == nil {
		return nil
	}
	var out []string
	for _, e := range c.Events {
		if e.Kind == incentives.EventPenalty {
			out = append(out, e.Peer)
		}
	}
	return out
}
