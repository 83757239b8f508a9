package node

import (
	"context"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/p2p"
)

// evidenceCheck is the evidence topic's full check: the rounds it is about are ones the
// ledger can still penalise, then (CPU heavy: bundle verifications) the checker, with a
// memo by evidence ID; evidence that proves nothing is Reject.
func (f *fullChecks) evidenceCheck(_ context.Context, fwd peer.ID, _ []byte, obj any) (p2p.Result, string) {
	e := obj.(*incentives.Evidence)
	if r, reason := f.evidenceWindow(e); r != p2p.Accept {
		return r, reason
	}
	local := fwd == f.cfg.Self
	if !local { // the node's own evidence was checked when made
		if !f.tryHeavy() {
			return p2p.Ignore, reasonBusy
		}
		defer f.releaseHeavy()
	}
	if err := f.checkEvidence(e); err != nil {
		return p2p.Reject, reasonEvidence
	}
	if !local && !f.cfg.Deliver(evidenceIn{ev: e}) {
		return p2p.Ignore, reasonBusy
	}
	return p2p.Accept, reasonOK
}

// evidenceWindow ignores evidence about a round (the one it claims, Evidence.Claim) older
// than the ledger's evidence window before the first open round, or further ahead of it
// than that window (Build defers such evidence no further).
func (f *fullChecks) evidenceWindow(e *incentives.Evidence) (p2p.Result, string) {
	v, w := *f.view.Load(), f.cfg.EvidenceWindow
	off, err := e.Claim()
	if err != nil {
		return p2p.Reject, reasonEvidence
	}
	r := off.Round
	switch {
	case v.NextClose > w && r < v.NextClose-w:
		return p2p.Ignore, reasonLate
	case r > v.NextClose && r-v.NextClose > w:
		return p2p.Ignore, reasonFuture
	}
	return p2p.Accept, reasonOK
}

func (f *fullChecks) checkEvidence(e *incentives.Evidence) error {
	defer f.spent.stop(f.spent.start())
	_, err := f.evidence.Check(e)
	return err
}

// report checks evidence the node made, then delivers it to the loop and publishes it,
// once per offence, off the validator's goroutine.
func (f *fullChecks) report(e *incentives.Evidence) {
	off, err := e.Claim()
	if err != nil || !f.remember(off) {
		return
	}
	started := f.goAsync(func(ctx context.Context) {
		if err := f.checkEvidence(e); err != nil {
			f.cfg.Log.Warn("evidence this node made does not check out", "offence", off.String(), "err", err)
			f.forget(off) // another sighting may prove it
			return
		}
		if !f.cfg.Deliver(evidenceIn{ev: e}) {
			// Published all the same; the next sighting of the offence may deliver it.
			f.cfg.Metrics.counted(p2p.KindEvidence, p2p.Ignore, reasonBusy)
			f.forget(off)
		}
		if err := f.cfg.Publish(ctx, p2p.KindEvidence, e.Marshal()); err != nil {
			f.cfg.Log.Debug("publishing evidence", "offence", off.String(), "err", err)
		}
	})
	if !started {
		f.forget(off)
	}
}

// remember records an offence and reports whether it is new.
func (f *fullChecks) remember(off incentives.Offence) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.made[off] {
		return false
	}
	if len(f.made) >= maxMade {
		clear(f.made)
	}
	f.made[off] = true
	return true
}

func (f *fullChecks) forget(off incentives.Offence) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.made, off)
}

// tryHeavy takes a verification slot if one is free.
func (f *fullChecks) tryHeavy() bool {
	select {
	case f.heavy <- struct{}{}:
		return true
	default:
		return false
	}
}

func (f *fullChecks) releaseHeavy() { <-f.heavy }

// goAsync runs fn on its own goroutine if fewer than MaxAsync bundle fetches and
// publications run, and reports whether it does. fn's context ends at close.
func (f *fullChecks) goAsync(fn func(ctx context.Context)) bool { return f.goIn(f.async, fn) }

// goIn runs fn on its own goroutine if pool has room, and reports whether it does.
func (f *fullChecks) goIn(pool chan struct{}, fn func(ctx context.Context)) bool {
	select {
	case pool <- struct{}{}:
	default:
		return false
	}
	// Validators run until the host stops, which is after close: under the lock, nothing
	// starts once close began, and the wait group is never added to while close waits.
	f.life.Lock()
	if f.stopped {
		f.life.Unlock()
		<-pool
		return false
	}
	f.wg.Add(1)
	f.life.Unlock()
	go func() {
		defer func() { <-pool; f.wg.Done() }()
		fn(f.ctx)
	}()
	return true
}
