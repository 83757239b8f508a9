package node

import (
	"context"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/p2p"
)

// Votes travel as references (incentives.VoteRef): the signature and the digest of the
// record voted for, a few hundred bytes, instead of a record that lists every included
// contribution. The nodes of a round that closed alike hold that record already (their
// own), so the common vote costs its peers nothing more; a node that lacks it (it has not
// closed the round yet, or closed it otherwise) fetches it once by digest, whoever voted
// for it, and checks it against the digest before anything reads it.

// Bounds of the records waited for.
const (
	// maxBodyWaits bounds the digests whose records are waited for (fetched, or given up
	// and waiting for the record to come otherwise, until their round leaves the
	// window); past it a reference waits in the book alone, and its vote reaches the
	// loop only whole (a gap fetch or the head watch asks for it: recordBook.ask).
	maxBodyWaits = 256
	// maxRefsPerBody bounds the references waiting for one record, and maxBodyFwds the
	// forwarders remembered to ask for it.
	maxRefsPerBody = 1024
	maxBodyFwds    = 8
	// maxBodyAsks is how many peers are asked for one record, bodyAskTimeout bounds each
	// ask, and bodyRetry is the first pause after a peer that did not hold it (doubling):
	// a forwarder passes a reference on before it holds the record, and may hold it soon.
	// A peer is asked at most maxGapsPerPeer record fetches at once (the gap fetches'
	// count), so that one peer that stalls holds few.
	maxBodyAsks    = 8
	bodyAskTimeout = 2 * time.Second
	bodyRetry      = 50 * time.Millisecond
	// deliverTries bounds the tries to hand a found vote to a full inbox, askWait apart.
	deliverTries = 50
)

// refWaiter is what waits for one record: the references naming it, the round of the
// first (a hint for the peers asked) and the peers that forwarded them. lost: the last
// fetch gave up; the record may still come (the node's own close, a whole vote), or a
// further reference naming it starts a fetch again.
type refWaiter struct {
	round uint64
	refs  []*incentives.VoteRef
	fwds  []peer.ID
	lost  bool
}

// outgoing is what the node publishes for data on the topic of kind: its vote as a
// reference, the record held first to be served by digest and to check the reference as
// the node publishes it (whole when the book has no room for it); anything else as it
// is. Its peers' votes that wait for that record, as they do when they come before the
// node's own close, are handed to the loop now.
func (f *fullChecks) outgoing(kind string, data []byte) []byte {
	if kind != p2p.KindRecords {
		return data
	}
	sr, rec, err := incentives.DecodeSignedRecord(data)
	if err != nil || !sr.IsVote() {
		return data
	}
	hash := incentives.RecordDigest(sr.Record)
	if !f.records.addBody(rec.Round, hash, sr.Record) {
		return data
	}
	f.bodyArrived(hash)
	return sr.Ref().Marshal()
}

// bodyArrived hands the votes waiting for the record of hash, which the book now holds,
// to the loop, off the caller's goroutine when a slot is free.
func (f *fullChecks) bodyArrived(hash [32]byte) {
	f.mu.Lock()
	_, waits := f.refWait[hash]
	f.mu.Unlock()
	body := f.records.body(hash)
	if !waits || body == nil {
		return
	}
	if !f.goAsync(func(ctx context.Context) { f.bodyFound(ctx, hash, body) }) {
		f.bodyFound(f.ctx, hash, body)
	}
}

// wantBody fetches the record ref names off the validator's goroutine: one fetch per
// digest at a time, which every reference naming it waits for.
func (f *fullChecks) wantBody(fwd peer.ID, ref *incentives.VoteRef) {
	hash := ref.Key()
	f.mu.Lock()
	w, ok := f.refWait[hash]
	switch {
	case ok:
		if len(w.refs) < maxRefsPerBody {
			w.refs = append(w.refs, ref)
		}
		if len(w.fwds) < maxBodyFwds && !slices.Contains(w.fwds, fwd) {
			w.fwds = append(w.fwds, fwd)
		}
		if !w.lost {
			f.mu.Unlock()
			return
		}
		w.lost = false // a new reference: ask again, its forwarder first
		w.fwds = append([]peer.ID{fwd}, slices.DeleteFunc(w.fwds, func(p peer.ID) bool { return p == fwd })...)
	case len(f.refWait) >= maxBodyWaits || f.cfg.Fetch == nil:
		f.mu.Unlock()
		return
	default:
		f.refWait[hash] = &refWaiter{round: ref.Round, refs: []*incentives.VoteRef{ref}, fwds: []peer.ID{fwd}}
	}
	f.mu.Unlock()
	if !f.enqueue(&f.bodies, string(hash[:]), ref.Round, func(ctx context.Context) { f.fetchBody(ctx, hash) }) {
		f.bodyLost(hash)
	}
}

// fetchBody asks peers in turn for the record of digest hash until one sends it: the
// forwarders of references naming it, then the signers and the records topic's other
// peers, at most maxBodyAsks. What comes is taken only if it has that digest.
func (f *fullChecks) fetchBody(ctx context.Context, hash [32]byte) {
	var asked []peer.ID
	for try := 0; try < maxBodyAsks && ctx.Err() == nil; try++ {
		if body := f.records.body(hash); body != nil { // the node's own close, or a whole vote
			f.bodyFound(ctx, hash, body)
			return
		}
		cands, round, ok := f.bodyPeers(hash, asked)
		if !ok || len(cands) == 0 {
			break
		}
		from, free := peer.ID(""), false
		for _, p := range cands {
			if free = f.records.startAsk(p); free {
				from = p
				break
			}
		}
		if free {
			asked = append(asked, from)
			actx, cancel := context.WithTimeout(ctx, bodyAskTimeout)
			data, err := f.cfg.Fetch.fetch(actx, from, bodyRequest(round, hash))
			cancel()
			f.records.endAsk(from)
			if err == nil && incentives.RecordDigest(data) == hash {
				f.bodyFound(ctx, hash, data)
				return
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(bodyRetry << min(try, 4)):
		}
	}
	f.bodyLost(hash)
}

// bodyPeers are the peers to ask for the record of hash, in order, none in asked nor
// this node: the forwarders, then the signers of references naming it, then the records
// topic's other peers; false when nothing waits for it any more.
func (f *fullChecks) bodyPeers(hash [32]byte, asked []peer.ID) ([]peer.ID, uint64, bool) {
	var topic []peer.ID
	if f.cfg.Peers != nil {
		topic = f.cfg.Peers()
	}
	f.mu.Lock()
	w, ok := f.refWait[hash]
	if !ok {
		f.mu.Unlock()
		return nil, 0, false
	}
	cands := slices.Clone(w.fwds)
	for _, ref := range w.refs {
		if id, err := peer.Decode(ref.Signer); err == nil && slices.Contains(topic, id) {
			cands = append(cands, id)
		}
	}
	round := w.round
	f.mu.Unlock()
	var out []peer.ID
	for _, p := range append(cands, topic...) {
		if p != f.cfg.Self && !slices.Contains(asked, p) && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out, round, true
}

// bodyFound hands every vote waiting for the record of hash, now found, to the loop, and
// keeps the record to serve it. A reference of another round than the record's is no
// vote the loop can count: it stays held (a second vote of its signer for the round
// still proves a vote cast twice) and is never delivered.
func (f *fullChecks) bodyFound(ctx context.Context, hash [32]byte, body []byte) {
	f.mu.Lock()
	w := f.refWait[hash]
	delete(f.refWait, hash)
	f.mu.Unlock()
	if w == nil {
		return
	}
	for _, ref := range w.refs {
		key := recordKey{round: ref.Round, signer: ref.Signer}
		sr, rec, err := ref.With(body)
		if err != nil {
			f.records.claim(key, hash, nil)
			f.cfg.Metrics.counted(p2p.KindRecords, p2p.Ignore, reasonDecode)
			continue
		}
		f.records.addBody(rec.Round, hash, body)
		if !f.records.claim(key, hash, sr.Marshal()) {
			continue // it came whole meanwhile
		}
		if !f.deliverSoon(ctx, recordIn{sr: sr, rec: rec}) {
			f.records.unclaim(key, hash) // a gap fetch may bring it whole
			f.cfg.Metrics.counted(p2p.KindRecords, p2p.Ignore, reasonBusy)
			continue
		}
		f.fillGaps(w.fwds[0], key)
	}
}

// bodyLost notes that no peer asked sent the record of hash: the references naming it
// stay held, waiting, so that a later reference of their signers for the round is still
// a second vote; the votes reach the loop when the record comes (the node's own close, a
// whole vote: bodyArrived), when a further reference naming it is fetched for, or whole
// by a gap fetch (recordBook.ask). The waiter is forgotten with its round (pruneWaits).
func (f *fullChecks) bodyLost(hash [32]byte) {
	f.mu.Lock()
	w := f.refWait[hash]
	n := 0
	if w != nil {
		w.lost, n = true, len(w.refs)
	}
	f.mu.Unlock()
	for range n {
		f.cfg.Metrics.counted(p2p.KindRecords, p2p.Ignore, reasonBodyUnknown)
	}
	if body := f.records.body(hash); body != nil && n > 0 { // it came meanwhile
		f.bodyArrived(hash)
	}
}

// pruneWaits forgets the waiters of rounds before from.
func (f *fullChecks) pruneWaits(from uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for h, w := range f.refWait {
		if w.round < from {
			delete(f.refWait, h)
		}
	}
}

// deliverSoon hands in to the loop, trying again while its inbox is full, at most
// deliverTries times.
func (f *fullChecks) deliverSoon(ctx context.Context, in recordIn) bool {
	for range deliverTries {
		if f.cfg.Deliver(in) {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(askWait):
		}
	}
	return false
}
