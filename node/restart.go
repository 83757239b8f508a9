package node

import (
	"bytes"
	"fmt"
	"log/slog"
	"time"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/node/checkpoint"
	"github.com/lowband/lowband/node/core"
	"github.com/lowband/lowband/node/store"
	"github.com/lowband/lowband/training"
	"github.com/lowband/lowband/training/round"
)

// resumePoint is where a node's training starts: the global state and ledger of the
// store's head, the round of its first local work, and its local state (nil: none).
type resumePoint struct {
	state  round.State
	ledger *incentives.State
	first  uint64
	local  *localState
	snaps  []core.Snapshot // the last rounds replayed, for the core to repair them (core.Seed)
}

// freshStart is the resume point of a home that never trained: θ_0 at round 0.
func freshStart(p *Params, led *incentives.State) (resumePoint, error) {
	st, err := p.Initial()
	return resumePoint{state: st, ledger: led}, err
}

// resume finds where the node's training starts on its home. A home that never trained
// starts at θ_0, and notes that it trained (an empty local state in the store). Any other
// rebuilds the state of the store's head: from the last checkpoint it keeps (or genesis),
// each stored round is closed again from its record and shards and must give the record's
// roots; the ledger reached must be the stored one. The last repair_depth rounds replayed
// are kept for the core to repair them (core.Seed): the replay starts from a checkpoint
// at least that far back when the store keeps one. Its local work goes on past the rounds
// it may have signed before it stopped (head + delay + 1), with the local state it saved
// last, if that one restores. It logs one line.
func resume(p *Params, s *configs.Spec, self string, l *ledger, log *slog.Logger) (resumePoint, error) {
	began := time.Now()
	rp, c, replayed, err := resumeStore(p, s, self, l, log)
	if err != nil || !replayed {
		return rp, err
	}
	led := rp.ledger
	log.Info(fmt.Sprintf("resumed at round %d from checkpoint %d, replayed %d rounds, in %.1f seconds", led.Round, c, led.Round-c, time.Since(began).Seconds()),
		"round", led.Round, "checkpoint", c, "replayed", led.Round-c, "seconds", time.Since(began).Seconds(), "first_local_round", rp.first, "repairable", len(rp.snaps))
	return rp, nil
}

// resumeStore is resume without its line: the resume point, the round of the checkpoint
// the replay started from, and whether the store was replayed (false: a fresh start).
func resumeStore(p *Params, s *configs.Spec, self string, l *ledger, log *slog.Logger) (resumePoint, uint64, bool, error) {
	led := l.state.Load()
	_, blob, trained, err := l.st.Local()
	if err != nil {
		return resumePoint{}, 0, false, fmt.Errorf("reading the local state: %w", err)
	}
	if led.Round == 0 && !trained {
		rp, err := freshStart(p, led)
		if err != nil {
			return rp, 0, false, err
		}
		empty, _ := (&localState{}).marshal()
		return rp, 0, false, l.st.PutLocal(0, empty)
	}
	rep := newReplayer(p, s, self)
	init, err := p.Initial()
	if err != nil {
		return resumePoint{}, 0, false, err
	}
	rep.keep = repairDepth(s)
	lim := checkpoint.Limits{Network: s.NetworkID(), Run: s.Run, Like: init.Params}
	st, startLed, c, err := rep.replayStart(l.st, lim, init, led.Round)
	if err != nil {
		return resumePoint{}, 0, false, fmt.Errorf("resuming at round %d: %w", led.Round, err)
	}
	model, replayed, err := rep.replayFrom(l.st, st, startLed, led.Round)
	if err != nil {
		return resumePoint{}, 0, false, fmt.Errorf("resuming at round %d: %w", led.Round, err)
	}
	if !bytes.Equal(replayed.Head, led.Head) {
		return resumePoint{}, 0, false, fmt.Errorf("resuming at round %d: the replayed ledger's root %x is not the stored one %x", led.Round, replayed.Head, led.Head)
	}
	if err := keptVotes(l.st, rep.snaps); err != nil {
		return resumePoint{}, 0, false, fmt.Errorf("resuming at round %d: %w", led.Round, err)
	}
	rp := resumePoint{state: model, ledger: led, first: led.Round + uint64(p.round.Delay) + 1, snaps: rep.snaps}
	if trained && len(blob) > 0 {
		if rp.local, err = decodeLocal(blob, values(init.Params)); err != nil {
			log.Warn("the saved local state does not decode: training on without it", "err", err)
		}
	}
	return rp, c, true, nil
}

// keptVotes gives each snapshot the vote the store kept for its round (none: nil), so
// that the core resends those bytes and signs nothing again (core.Seed).
func keptVotes(st *store.Store, snaps []core.Snapshot) error {
	for i := range snaps {
		v, err := st.Vote(snaps[i].Record.Round)
		if err != nil {
			return err
		}
		snaps[i].Vote = v
	}
	return nil
}

// repairDepth is how many closed rounds stay open to repair on the network of s.
func repairDepth(s *configs.Spec) uint64 {
	if d := uint64(s.Agreement.RepairDepth); d > 0 {
		return d
	}
	return core.DefaultDepth
}

// values is the number of values in ts.
func values(ts []training.Tensor) int {
	n := 0
	for _, t := range ts {
		n += len(t.Data)
	}
	return n
}

// saveLocal saves the node's local state now that round is the first open one, every
// checkpoint_every rounds (the checkpoints' cadence), in its own key of the store, and
// drops the stored shards of the rounds before the oldest checkpoint the store keeps. The
// loop calls it after a commit: the state is encoded there, reading it in place, and
// written off the loop, one save at a time (a save due while the last is still being written is
// skipped). A failure is logged: the local state is the node's own, and a restart without
// it trains on from fresh optimizer and codec state.
func (n *Node) saveLocal(round uint64) {
	every := uint64(n.opts.Spec.Agreement.CheckpointEvery)
	if every == 0 || round%every != 0 {
		return
	}
	if l := n.train.loop; l.working {
		// A round closed during the next round's local work (the recipe's merge): the
		// trainer is changing the state a save reads. The loop saves it once that work
		// has ended, before the next starts: the state a close after the work would have
		// saved (the work encoded, the trainer idle).
		l.saveDue = round
		return
	}
	if !n.train.saving.TryLock() {
		n.log.Warn("the last local state is still being saved: skipping this one", "round", round)
		return
	}
	// Written on the loop straight from the state to a temporary file (about 50 MB on
	// the default task, into the page cache), synced and put in place off it.
	lf, err := n.ledger.st.CreateLocal(round)
	if err == nil {
		if err = n.train.loop.writeLocal(round, lf); err != nil {
			lf.Abort()
		}
	}
	go func() {
		defer n.train.saving.Unlock()
		if err == nil {
			err = lf.Commit()
		}
		if err == nil {
			err = n.pruneShards()
		}
		if err != nil {
			n.log.Warn("saving the local state", "round", round, "err", err)
		}
	}()
}

// pruneShards drops the stored shards a replay no longer needs: those of the rounds before
// the oldest checkpoint the store keeps (none without a checkpoint), so that a restart can
// still replay from an older kept checkpoint when a newer one does not load, and peers can
// fetch the contributions of every round since it.
func (n *Node) pruneShards() error {
	kept, err := n.ledger.st.Checkpoints()
	if err != nil || len(kept) == 0 {
		return err
	}
	return n.ledger.st.PruneShards(kept[0].Round)
}

// restoreLocal gives the core and the trainer what rp says: the rounds replayed last, to
// repair them, local work from rp.first on, and the local state, which is dropped with a warning if it does not restore (it is the
// node's own; training goes on without it).
func restoreLocal(rp resumePoint, c *core.Core, tr *trainer, h int, log *slog.Logger) error {
	if err := c.Seed(rp.snaps); err != nil { // the replay checked them: not expected
		log.Warn("the rounds replayed do not seed the core: it cannot repair them", "err", err)
	}
	var ml *round.LocalState
	if rp.local != nil && rp.local.Round <= rp.state.Round {
		ml = &rp.local.Machine
		if err := tr.restore(rp.local, (rp.state.Round+2)*uint64(h)); err != nil {
			log.Warn("the saved local state does not restore: training on without it", "err", err)
			ml = nil
		}
	}
	if rp.first == rp.state.Round && ml == nil {
		return nil
	}
	if err := c.Resume(rp.first, ml); err != nil {
		if ml == nil {
			return err
		}
		log.Warn("the saved local state does not restore: training on without it", "err", err)
	}
	return nil
}
