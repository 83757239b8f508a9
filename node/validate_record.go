package node

import (
	"context"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/node/core"
	"github.com/lowband/lowband/p2p"
)

// record is the records topic's wire check: a vote, whole (a signed commit record: size
// first, then incentives.DecodeSignedRecord: canonical form, the inner record decodes,
// not a committed record, which is never gossiped) or as a reference to its record
// (incentives.DecodeVoteRef), of this network and run. The signature is the full check's.
func (w wire) record(data []byte) (any, p2p.Result, string) {
	if len(data) > min(p2p.MaxMessageSize, incentives.MaxSignedRecordSize) {
		return nil, p2p.Reject, reasonSize
	}
	if len(data) <= incentives.MaxVoteRefSize {
		if ref, err := incentives.DecodeVoteRef(data); err == nil {
			return scoped(refIn{ref: ref})(w.scope(ref.Network, ref.Run))
		}
	}
	sr, rec, err := incentives.DecodeSignedRecord(data)
	if err != nil || !sr.IsVote() { // a committed record is no vote, and never gossiped
		return nil, p2p.Reject, reasonDecode
	}
	return scoped(recordIn{sr: sr, rec: rec})(w.scope(sr.Network, sr.Run))
}

// refIn is a vote reference that passed the wire check, on its way to the full check.
type refIn struct{ ref *incentives.VoteRef }

// recordKeyOf is the round and signer of a records topic object (recordIn or refIn).
func recordKeyOf(obj any) recordKey {
	if in, ok := obj.(refIn); ok {
		return recordKey{round: in.ref.Round, signer: in.ref.Signer}
	}
	in := obj.(recordIn)
	return recordKey{round: in.rec.Round, signer: in.sr.Signer}
}

// recordWindow decides a record's round against the view, as the core does
// (core.ErrRecordWindow): older than the repair window is late, past RecordsUpTo (the
// round after the next to close and the repair depth more) future (Ignore both: the
// window is this node's view, and a record ignored now is fetched later when it is
// missed). A round not closed yet is in: the core keeps its records until it closes it.
func recordWindow(v core.View, round uint64) (p2p.Result, string) {
	switch {
	case round < v.RepairFrom:
		return p2p.Ignore, reasonLate
	case round > v.RecordsUpTo:
		return p2p.Ignore, reasonFuture
	}
	return p2p.Accept, reasonOK
}

// recordCheck is the records topic's full check, cheapest first: the round window, the
// signer among the core's voters (voter: a record of a signer with power in no ledger of
// the window carries no weight and is not kept; one of a round not closed yet is set
// aside, and checked again when a view counts its signer among the voters: offerAside),
// the first record of the signer for the round and the first other one (the same vote
// again passes; the second passes once, so that gossip carries it to every node, which
// then drops the signer's vote on the round; a third and later are ignored), the
// signature (on a verification slot), then the loop's inbox. Votes are told apart by
// their record's digest, so a vote that came as a reference and the same vote whole are
// one. The node's own record is held to be served, not handed to the loop. A record of a
// signer whose records of earlier rounds of the window the node lacks makes it ask the
// forwarder for them (fillGaps). A reference whose record the node does not hold passes
// on its signature and waits for the record (refCheck).
func (f *fullChecks) recordCheck(_ context.Context, fwd peer.ID, data []byte, obj any) (p2p.Result, string) {
	v := f.view.Load()
	key := recordKeyOf(obj)
	if r, reason := recordWindow(*v, key.round); r != p2p.Accept {
		return r, reason
	}
	if !f.voter(v, key.signer) {
		if key.round >= v.NextClose && fwd != f.cfg.Self {
			f.records.setAside(key, fwd, data) // its round's ledger may give it power
		}
		return p2p.Ignore, reasonUnstaked
	}
	if in, ok := obj.(refIn); ok {
		return f.refCheck(fwd, key, in.ref)
	}
	in := obj.(recordIn)
	return f.wholeCheck(fwd, key, data, in)
}

// wholeCheck is recordCheck's part for a vote whose record the node holds: the signature
// unless the node published it or holds it under the same signature, then the book and
// the loop. A vote held under another signature (re-signed, or forged) is checked:
// Reject when forged, Ignore `resigned` otherwise. A vote that came as a reference and
// waits for this record reaches the loop now, once, with every other vote waiting for it
// (bodyArrived).
func (f *fullChecks) wholeCheck(fwd peer.ID, key recordKey, data []byte, in recordIn) (p2p.Result, string) {
	hash, sig := incentives.RecordDigest(in.sr.Record), in.sr.Sig
	found := f.records.find(key, hash, sig)
	switch {
	case found == putSame && !f.records.waiting(key, hash):
		return p2p.Accept, reasonOK
	case found == putRepeated:
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
	if found == putResigned {
		return p2p.Ignore, reasonResigned
	}
	if f.records.addBody(key.round, hash, in.sr.Record) {
		defer f.bodyArrived(hash)
	}
	took := f.records.put(key, hash, sig, data)
	switch took {
	case putSame: // a reference of it waits, or a copy checked meanwhile took the slot
		if !f.records.claim(key, hash, data) || local {
			return p2p.Accept, reasonOK
		}
		if !f.cfg.Deliver(in) {
			f.records.unclaim(key, hash)
			return p2p.Ignore, reasonBusy
		}
		return p2p.Accept, reasonOK
	case putRepeated:
		return p2p.Ignore, reasonSecondRecord
	case putResigned:
		return p2p.Ignore, reasonResigned
	}
	if local {
		return p2p.Accept, reasonOK
	}
	if !f.cfg.Deliver(in) {
		f.records.remove(key, hash)
		return p2p.Ignore, reasonBusy
	}
	if took == putNew {
		f.fillGaps(fwd, key)
	}
	return p2p.Accept, reasonOK
}

// refCheck is recordCheck's part for a vote that came as a reference (incentives.VoteRef).
// When the node holds the record it names (its own of the round, as a rule, or one a peer
// sent), it is the whole vote (wholeCheck). Otherwise the reference passes on its
// signature alone (it proves the signer's vote; gossip carries it on at once, a few
// hundred bytes) and is held waiting, and the record is fetched by digest off the
// validator (wantBody). A second reference of the signer for the round, naming another
// record, proves a vote cast twice with the first: the node makes the evidence at once
// (report), whether or not either record ever comes.
func (f *fullChecks) refCheck(fwd peer.ID, key recordKey, ref *incentives.VoteRef) (p2p.Result, string) {
	hash := ref.Key()
	if body := f.records.body(hash); body != nil {
		if sr, rec, err := ref.With(body); err == nil {
			return f.wholeCheck(fwd, key, sr.Marshal(), recordIn{sr: sr, rec: rec})
		}
		// The record of that digest is of another round; the signature, checked below,
		// still proves the signer voted for it in this round (a vote cast twice with
		// any other): held, never delivered.
	}
	found := f.records.find(key, hash, ref.Sig)
	switch found {
	case putSame:
		return p2p.Accept, reasonOK
	case putRepeated:
		return p2p.Ignore, reasonSecondRecord
	}
	if fwd == f.cfg.Self {
		return p2p.Ignore, reasonBodyUnknown // outgoing holds the record first: never
	}
	if !f.tryHeavy() {
		return p2p.Ignore, reasonBusy
	}
	err := f.verifyRef(ref)
	f.releaseHeavy()
	if err != nil {
		return p2p.Reject, reasonSignature
	}
	if found == putResigned {
		return p2p.Ignore, reasonResigned
	}
	took := f.records.putRef(key, hash, ref.Sig)
	switch took {
	case putSame:
		return p2p.Accept, reasonOK
	case putRepeated:
		return p2p.Ignore, reasonSecondRecord
	case putResigned:
		return p2p.Ignore, reasonResigned
	case putConflict:
		if first, ok := f.records.firstOther(key, hash); ok {
			if ev, err := incentives.NewDoubleVote(ref.Network, ref.Run, ref.Signer, ref.Round, first, ref.Vote()); err == nil {
				f.report(ev)
			}
		}
	}
	if f.records.body(hash) != nil { // of another round: no vote to deliver
		f.records.claim(key, hash, nil)
		return p2p.Accept, reasonOK
	}
	f.wantBody(fwd, ref)
	return p2p.Accept, reasonOK
}

func (f *fullChecks) verifyRef(ref *incentives.VoteRef) error {
	defer f.spent.stop(f.spent.start())
	return ref.Verify()
}

func (f *fullChecks) verifyRecord(sr *incentives.SignedRecord) error {
	defer f.spent.stop(f.spent.start())
	return sr.Verify()
}

// voter reports whether signer's records may weigh: it is one of the view's voters (power
// in the ledger at the start of a round of the window, the ledger in force or the next:
// core.View.Voters), or, before the core gave a view with them, holds voting power in the
// ledger in force.
func (f *fullChecks) voter(v *core.View, signer string) bool {
	if v.Voters != nil {
		return v.Voters[signer]
	}
	led := f.ledger()
	return led == nil || led.Power(signer) > 0
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
// counted as the records topic's. When from fails (no answer in time, an answer that is
// not the record asked for, a record the checks reject, or none held), it asks another
// peer of the records topic not asked for k yet, at most maxGapFallbacks more, each peer
// with at most maxGapsPerPeer such fetches in flight: a forwarder that stalls or lies
// does not keep the node from a record others hold.
func (f *fullChecks) fetchRecord(ctx context.Context, from peer.ID, k recordKey) {
	for tries := 0; ; tries++ {
		if f.recordFrom(ctx, from, k) || tries == maxGapFallbacks || ctx.Err() != nil {
			return
		}
		var peers []peer.ID
		if f.cfg.Peers != nil {
			peers = f.cfg.Peers()
		}
		next, ok := f.records.another(k, peers, f.cfg.Self)
		if !ok {
			return
		}
		from = next
	}
}

// askWait is how often a gap fetch waiting for a peer's fetches in flight looks again.
const askWait = 20 * time.Millisecond

// recordFrom asks from for the record of k, at most maxGapsPerPeer at once per peer (it
// waits for a slot: a peer busy with this node's other gaps has not failed), and reports
// whether asking is over: the record was taken, or ignored for its round or the node's
// load (asking another would not help). It is not over when from did not answer or hold
// it, or sent what the checks reject.
func (f *fullChecks) recordFrom(ctx context.Context, from peer.ID, k recordKey) bool {
	for !f.records.startAsk(from) { // wait for one of from's fetches to end (each is bounded)
		select {
		case <-ctx.Done():
			return false
		case <-time.After(askWait):
		}
	}
	defer f.records.endAsk(from)
	data, err := f.cfg.Fetch.fetch(ctx, from, recordRequest(k.round, k.signer))
	if err != nil {
		return false
	}
	return f.checkRecordAgain(ctx, from, data, k, true)
}

// checkRecordAgain checks data, the record of k that came from from outside gossip, as
// gossip, counted as the records topic's; false when the checks reject it. With whole
// set, data answers a request for the signed record and must be one: a reference there
// is not what was asked for (it would pass as a vote held, and end the asking while the
// vote still waits for its record).
func (f *fullChecks) checkRecordAgain(ctx context.Context, from peer.ID, data []byte, k recordKey, whole bool) bool {
	obj, r, reason := f.cfg.Wire.record(data)
	if r == p2p.Accept {
		if _, isRef := obj.(refIn); recordKeyOf(obj) != k || whole && isRef {
			r, reason = p2p.Reject, reasonDecode // not what was asked for
		}
	}
	if r == p2p.Accept {
		r, reason = f.recordCheck(ctx, from, data, obj)
	}
	f.cfg.Metrics.counted(p2p.KindRecords, r, reason)
	return r != p2p.Reject
}

// offerAside checks again, off the loop, the records set aside whose signer is a voter
// of v (the view's voters changed: a round's ledger gave it power), and forgets those of
// rounds v no longer keeps.
func (f *fullChecks) offerAside(v core.View) {
	for _, a := range f.records.takeAside(v.RepairFrom, func(signer string) bool { return f.voter(&v, signer) }) {
		f.enqueue(&f.gaps, fmt.Sprint("aside", a.key.round, a.key.signer), a.key.round, func(ctx context.Context) {
			_ = f.checkRecordAgain(ctx, a.fwd, a.data, a.key, false)
		})
	}
}
