package node

import (
	"bytes"
	"context"
	"slices"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/node/core"
	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/verify"
)

// repairWant is a shard a repair of a closed round wants: its round, signer and payload
// CID, and the peers to ask, in order.
type repairWant struct {
	round uint64
	peer  string
	cid   []byte
	count uint32   // how many shards the entry lists (0: not checked)
	taken []uint32 // indexes the entry's other shards hold (core.Want.Taken)
	peers []peer.ID
}

// fits reports whether a shard of index and count may be one of the wanted entry's.
func (w repairWant) fits(index, count uint32) bool {
	return w.count == 0 || count == w.count && index < count
}

// wantCID queues the shard of w for the repair fetchers, which fetch it (fetchCID) off
// the caller's goroutine, each once while it is queued or fetched.
func (f *fullChecks) wantCID(w repairWant) {
	f.enqueue(&f.repairs, cidKey(w.round, w.peer, w.cid), w.round, func(ctx context.Context) { f.fetchCID(ctx, w) })
}

// fetchCID gets the shard of w to the loop: from the content store when it holds it
// (checked when it came), else from peers in turn until one sends it and it passes every
// check, or its round leaves the repair window. It blocks. Each answer is counted as the
// shards topic's.
func (f *fullChecks) fetchCID(ctx context.Context, w repairWant) bool {
	if _, _, data := f.content.held(w.round, w.peer, w.cid); data != nil { // repairShard checks it as a peer's answer
		r, reason := f.repairShard(ctx, "", w, data)
		if r == p2p.Accept {
			return true
		}
		f.cfg.Log.Debug("a held shard for a repair", "round", w.round, "result", r, "reason", reason)
	}
	if f.cfg.Fetch == nil {
		return false
	}
	for _, p := range w.peers {
		if ctx.Err() != nil || w.round < f.view.Load().RepairFrom {
			return false
		}
		if p == f.cfg.Self {
			continue
		}
		data, err := f.cfg.Fetch.fetch(ctx, p, cidRequest(w.round, w.peer, w.cid))
		if err != nil {
			f.cfg.Log.Debug("fetching a shard for a repair", "round", w.round, "peer", p.ShortString(), "err", err)
			continue
		}
		r, reason := f.repairShard(ctx, p, w, data)
		f.cfg.Metrics.counted(p2p.KindShards, r, reason)
		if r == p2p.Accept {
			return true
		}
		f.cfg.Log.Debug("a shard fetched for a repair", "round", w.round, "peer", p.ShortString(), "result", r, "reason", reason)
	}
	f.cfg.Log.Debug("no peer sent a shard a repair wants", "round", w.round, "asked", len(w.peers))
	return false
}

// repairShard checks a shard that from sent (or the content store held, from empty) for
// the repair want w, and hands it to the loop marked as a repair's: it must be the shard
// asked for (round, signer and payload CID); its round may be closed, from the view's RepairFrom
// on, where gossip finds it late; then bundle (fetched from from when unknown), signature
// and content as any shard. It reaches the loop even when the content store held it: the
// repair asked for it.
func (f *fullChecks) repairShard(ctx context.Context, from peer.ID, w repairWant, data []byte) (p2p.Result, string) {
	obj, r, reason := f.cfg.Wire.shard(data)
	if r != p2p.Accept {
		return r, reason
	}
	s := obj.(*verify.Shard)
	if s.Header.Round != w.round || s.Header.Peer != w.peer || !bytes.Equal(s.Header.PayloadCID, w.cid) {
		return p2p.Reject, reasonDecode // not what was asked for
	}
	if !w.fits(s.Header.Index, s.Header.Count) {
		// The signer's payload in a slot that is not one of the entry's: the peer may hold
		// it honestly (the signer made it), and it proves nothing; the next peer is asked.
		return p2p.Ignore, reasonDecode
	}
	if r, reason := repairWindow(*f.view.Load(), s.Header.Round); r != p2p.Accept {
		return r, reason
	}
	h := [32]byte(s.Header.BundleHash)
	if _, ok := f.reg.get(h); !ok && from != "" {
		_ = f.fetchBundle(ctx, from, h)
	}
	hb, ok := f.reg.get(h)
	if !ok {
		return p2p.Ignore, reasonBundleUnknown
	}
	key, r, reason := f.attestedKey(s, hb)
	if r != p2p.Accept {
		return r, reason
	}
	if err := f.checkSignature(s, key); err != nil {
		return p2p.Reject, reasonSignature
	}
	if err := f.checkContent(s.Payload); err != nil {
		f.report(incentives.NewInvalidContent(hb.data, s))
		return p2p.Reject, reasonContent
	}
	if err := f.checkDue(s); err != nil {
		return p2p.Reject, reasonDue
	}
	if slices.Contains(w.taken, s.Header.Index) {
		// Another of the entry's payloads holds that slot: the two do not join (the node
		// would close the round without the entry), and the signer signed both for one
		// slot, which proves an equivocation when the store holds the other. The next peer
		// is asked.
		if f.content.differs(s) && f.content.put(s, data) == putConflict {
			f.equivocation(s, hb)
		}
		return p2p.Ignore, reasonDecode
	}
	if f.content.put(s, data) == putConflict {
		f.equivocation(s, hb) // the other version of a slot: proof, though a repair wanted it
	}
	if !f.cfg.Deliver(shardIn{shard: s, bundle: hb.data, at: f.cfg.Now(), repair: true}) {
		return p2p.Ignore, reasonBusy
	}
	return p2p.Accept, reasonOK
}

// repairWindow places a shard fetched for a repair: a round from RepairFrom on, up to the
// shards' window.
func repairWindow(v core.View, round uint64) (p2p.Result, string) {
	switch {
	case round < v.RepairFrom:
		return p2p.Ignore, reasonLate
	case round > v.NextLocal && round-v.NextLocal > v.Window:
		return p2p.Ignore, reasonFuture
	}
	return p2p.Accept, reasonOK
}
