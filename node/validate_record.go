package node

import (
	"context"
	"crypto/sha256"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/node/core"
	"github.com/lowband/lowband/p2p"
)

// record is the records topic's wire check: a signed commit record (size first, then
// incentives.DecodeSignedRecord: canonical form, the inner record decodes) of this
// network and run. The signature is the full check's.
func (w wire) record(data []byte) (any, p2p.Result, string) {
	if len(data) > min(p2p.MaxMessageSize, incentives.MaxSignedRecordSize) {
		return nil, p2p.Reject, reasonSize
	}
	sr, rec, err := incentives.DecodeSignedRecord(data)
	if err != nil {
		return nil, p2p.Reject, reasonDecode
	}
	return scoped(recordIn{sr: sr, rec: rec})(w.scope(sr.Network, sr.Run))
}

// recordWindow decides a record's round against the view, as the core does
// (core.ErrRecordWindow): older than the repair window is late, past the round after the
// next to close future (Ignore both: the window is this node's view, and a record
// ignored now is fetched later when it is missed). A round not closed yet is in: the
// core keeps its records until it closes it.
func recordWindow(v core.View, round uint64) (p2p.Result, string) {
	switch {
	case round < v.RepairFrom:
		return p2p.Ignore, reasonLate
	case round > v.NextClose+1:
		return p2p.Ignore, reasonFuture
	}
	return p2p.Accept, reasonOK
}

// recordCheck is the records topic's full check, cheapest first: the round window, the
// signer's stake in the ledger in force (a record without it carries no weight), the
// first record of the signer for the round (the same bytes again pass, others are
// ignored: the first counts), the signature (on a verification slot), then the loop's
// inbox. The node's own record is held to be served, not handed to the loop. A record of
// a signer whose records of earlier rounds of the window the node lacks makes it ask the
// forwarder for them (fillGaps).
func (f *fullChecks) recordCheck(_ context.Context, fwd peer.ID, data []byte, obj any) (p2p.Result, string) {
	in := obj.(recordIn)
	if r, reason := recordWindow(*f.view.Load(), in.rec.Round); r != p2p.Accept {
		return r, reason
	}
	if led := f.ledger(); led != nil && led.Stake(in.sr.Signer) == 0 {
		return p2p.Ignore, reasonUnstaked
	}
	key, hash := recordKey{round: in.rec.Round, signer: in.sr.Signer}, sha256.Sum256(data)
	switch f.records.find(key, hash) {
	case putSame:
		return p2p.Accept, reasonOK
	case putConflict:
		return p2p.Ignore, reasonSecondRecord
	}
	local := fwd == f.cfg.Self
	if !local {
		if !f.tryHeavy() {
			return p2p.Ignore, reasonBusy
		}
		err := f.verifyRecord(in.sr)
		f.releaseHeavy()
		if err != nil {
			return p2p.Reject, reasonSignature
		}
	}
	switch f.records.put(key, hash, data) {
	case putSame:
		return p2p.Accept, reasonOK // a copy checked meanwhile took the slot
	case putConflict:
		return p2p.Ignore, reasonSecondRecord
	}
	if local {
		return p2p.Accept, reasonOK
	}
	if !f.cfg.Deliver(in) {
		f.records.remove(key, hash)
		return p2p.Ignore, reasonBusy
	}
	f.fillGaps(fwd, key)
	return p2p.Accept, reasonOK
}

func (f *fullChecks) verifyRecord(sr *incentives.SignedRecord) error {
	defer f.spent.since(time.Now())
	return sr.Verify()
}

// ledger is the ledger in force, nil when the config has none.
func (f *fullChecks) ledger() *incentives.State {
	if f.cfg.Ledger == nil {
		return nil
	}
	return f.cfg.Ledger()
}

// fillGaps asks fwd, which forwarded the record of key, for the signer's records of the
// earlier rounds of the repair window the node does not hold: a node cut off for a few
// rounds learns what the others committed meanwhile (gossip does not deliver the past).
// Each round and signer is asked of a forwarder once, of at most maxGapAsks forwarders.
func (f *fullChecks) fillGaps(fwd peer.ID, key recordKey) {
	if f.cfg.Fetch == nil {
		return
	}
	for r := f.view.Load().RepairFrom; r < key.round; r++ {
		k := recordKey{round: r, signer: key.signer}
		if f.records.ask(k, fwd) {
			f.enqueue(&f.gaps, fmt.Sprint(k.round, k.signer, fwd), k.round, func(ctx context.Context) { f.fetchRecord(ctx, fwd, k) })
		}
	}
}

// fetchRecord asks from for the record of k and checks what it sends as gossip,
// counted as the records topic's.
func (f *fullChecks) fetchRecord(ctx context.Context, from peer.ID, k recordKey) {
	data, err := f.cfg.Fetch.fetch(ctx, from, recordRequest(k.round, k.signer))
	if err != nil {
		return
	}
	obj, r, reason := f.cfg.Wire.record(data)
	if r == p2p.Accept {
		if in := obj.(recordIn); in.rec.Round != k.round || in.sr.Signer != k.signer {
			r, reason = p2p.Reject, reasonDecode // not what was asked for
		}
	}
	if r == p2p.Accept {
		r, reason = f.recordCheck(ctx, from, data, obj)
	}
	f.cfg.Metrics.counted(p2p.KindRecords, r, reason)
}
