package core

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/training/compress"
	"github.com/lowband/lowband/training/round"
	"github.com/lowband/lowband/verify"
)

// waiting is a repair that needs shards this node does not hold: by round, signer and
// payload CID (wantKey), the entry each completes.
type waiting struct {
	from uint64              // replay from this round once the needed ones are in
	cids map[string]wantedAt // by wantKey
	need int                 // how many of cids the replay needs (the others are fetched ahead)
}

type wantedAt struct {
	round uint64
	peer  string
	cids  [][]byte // the entry's CIDs, sorted
	need  bool     // the replay stopped for it; else fetched ahead for a later round
}

// wantKey names a wanted shard: its round (8 bytes, big-endian), its signer (shardKey) and
// payload CID. Not round and CID alone: two entries of a round may list one payload (a
// copy of another peer's update), and each needs its own signer's shard.
func wantKey(r uint64, peer string, cid []byte) string {
	return string(binary.BigEndian.AppendUint64(nil, r)) + shardKey(peer, cid)
}

// shardKey names a shard of a round by its signer and payload CID: the peer ID (base58 or
// base32 text: never a '/'), a '/', the CID.
func shardKey(peer string, cid []byte) string { return peer + "/" + string(cid) }

// redo is one round closed again.
type redo struct {
	round    uint64
	next     round.State // the state after it
	commit   *Commit
	basis    [32]byte
	deferred []incentives.Evidence
}

// reconcile decides closed rounds from..head again and closes again those whose list
// changed, and every round after. It returns a Repair, or a Fetch of what is missing
// (then the Core waits; nothing changes until the shards come, or the round leaves the
// window).
func (c *Core) reconcile(from uint64) (Ready, error) {
	redos, missing, err := c.replay(from)
	if err != nil {
		return Ready{}, err
	}
	if len(missing) > 0 {
		return Ready{Fetch: c.await(from, append(missing, c.ahead(missing[0].round)...))}, nil
	}
	c.agree.wait = nil
	if len(redos) == 0 {
		return Ready{}, nil
	}
	rp, err := c.apply(redos)
	return Ready{Repair: rp}, err
}

// replay computes, without changing anything, what closing rounds from..head with their
// lists gives: nothing up to the first round whose decided list differs from the one its
// state was closed from, then that round and every later one. It stops at the first round
// that needs a contribution this node does not hold and returns what is missing.
func (c *Core) replay(from uint64) ([]redo, []wantedAt, error) {
	var redos []redo
	var pre round.State
	var led *incentives.State
	for u := max(from, c.repairFrom()); u < c.nextClose; u++ {
		cr := c.agree.closed[u]
		if cr == nil {
			continue // closed before this Core started: nothing to redo it from
		}
		if len(redos) == 0 {
			if cr.pre.Params == nil { // let go for a close that then failed (releaseLeaving)
				return nil, nil, fmt.Errorf("core: the state before round %d was let go: it cannot be closed again", u)
			}
			pre, led = cr.pre, cr.ledger
		}
		list, evidence, _ := c.decide(u, led)
		basis := fingerprint(list, evidence)
		if len(redos) == 0 && basis == cr.basis {
			continue
		}
		if missing := cr.missing(u, list); len(missing) > 0 {
			return nil, missing, nil
		}
		next, commit, deferred, err := c.closeWith(cr, pre, led, list, evidence)
		if err != nil {
			return nil, nil, err
		}
		redos = append(redos, redo{round: u, next: next, commit: commit, basis: basis, deferred: deferred})
		pre, led = next, commit.State
	}
	return redos, nil, nil
}

// ahead lists, for the closed rounds after r, the entries their lists decided by the
// ledgers this node holds now miss: a repair of r changes those ledgers only a little, so
// these are most likely what the replay needs next; fetching them with r's saves a round
// trip per round.
func (c *Core) ahead(r uint64) []wantedAt {
	var out []wantedAt
	for u := r + 1; u < c.nextClose; u++ {
		if cr := c.agree.closed[u]; cr != nil {
			list, _, _ := c.decide(u, cr.ledger)
			for _, m := range cr.missing(u, list) {
				m.need = false
				out = append(out, m)
			}
		}
	}
	return out
}

// missing lists the entries of list this node holds no contribution for.
func (cr *closedRound) missing(r uint64, list []incentives.Contribution) []wantedAt {
	var out []wantedAt
	for _, e := range list {
		if cr.held[entryKey(e.Peer, e.Shards)] == nil {
			out = append(out, wantedAt{round: r, peer: e.Peer, cids: e.Shards, need: true})
		}
	}
	return out
}

// closeWith closes round cr from pre with the ledger led and the inclusion list list: the
// live close's filters (admit, WeightsOf), round.Step, and the ledger's Build of the record
// listing what was aggregated, with evidence as its candidates.
func (c *Core) closeWith(cr *closedRound, pre round.State, led *incentives.State, list []incentives.Contribution, evidence []incentives.Evidence) (round.State, *Commit, []incentives.Evidence, error) {
	in := admit(led, list, map[string]int{})
	var cts []round.Contribution
	byPeer := map[string][][]byte{}
	for _, e := range in {
		h := cr.held[entryKey(e.Peer, e.Shards)]
		if h.msg == nil {
			continue // its shards do not decode: left out, as a live close would
		}
		cts = append(cts, round.Contribution{Round: pre.Round, Peer: e.Peer, Msg: h.msg})
		byPeer[e.Peer] = e.Shards
	}
	next, closed, err := round.Step(c.cfg.Round, pre, cts, WeightsOf(led, peersOf(in)))
	if err != nil {
		return round.State{}, nil, nil, fmt.Errorf("core: closing round %d again: %w", pre.Round, err)
	}
	modelRoot := next.Root()
	contribs := listed(&closed, func(p string) [][]byte { return byPeer[p] })
	b, err := led.Build(contribs, evidence, modelRoot[:], c.cfg.Checker)
	if err != nil {
		return round.State{}, nil, nil, fmt.Errorf("core: building the record of round %d again: %w", pre.Round, err)
	}
	return next, &Commit{Record: b.Record, State: b.State, Events: b.Events}, b.Deferred, nil
}

func peersOf(list []incentives.Contribution) []string {
	out := make([]string, len(list))
	for i, e := range list {
		out[i] = e.Peer
	}
	return out
}

// apply puts the rounds closed again in force: the snapshots of the rounds after each,
// the ledger, the machine's global state and the pending evidence.
func (c *Core) apply(redos []redo) (*Repair, error) {
	rp := &Repair{From: redos[0].round}
	copy(rp.OldRoot[:], c.ledger.Head)
	for _, rd := range redos {
		cr := c.agree.closed[rd.round]
		for _, e := range cr.record.Evidence {
			c.addEvidence(e) // left out now, maybe: Build drops it later if it counts already
		}
		cr.record, cr.basis = rd.commit.Record, rd.basis
		if nx := c.agree.closed[rd.round+1]; nx != nil {
			nx.pre, nx.ledger = rd.next, rd.commit.State
		}
		rp.Commits = append(rp.Commits, rd.commit)
	}
	last := redos[len(redos)-1]
	for _, e := range last.deferred {
		c.addEvidence(e)
	}
	if err := c.m.Reset(last.next); err != nil { // Step keeps the layout: cannot fail
		return nil, fmt.Errorf("core: putting the repaired state in force: %w", err)
	}
	c.ledger = last.commit.State
	copy(rp.NewRoot[:], c.ledger.Head)
	c.agree.repairs += len(redos)
	return rp, nil
}

// await records what a repair waits for and returns the wants of the CIDs not held, the
// entry's peer first; those the repair waited for already are in flight and not asked for
// again (each live close asks again for what is still missing).
func (c *Core) await(from uint64, missing []wantedAt) []Want {
	old := c.agree.wait
	w := &waiting{from: from, cids: map[string]wantedAt{}}
	var out []Want
	for _, m := range missing {
		cr := c.agree.closed[m.round]
		for _, cid := range m.cids {
			k := wantKey(m.round, m.peer, cid)
			if _, dup := w.cids[k]; dup || cr.fetched[shardKey(m.peer, cid)].s != nil {
				continue
			}
			w.cids[k] = m
			if m.need {
				w.need++
			}
			if old == nil || !old.asked(k) {
				out = append(out, cr.want(m, cid))
			}
		}
	}
	c.agree.wait = w
	return out
}

func (w *waiting) asked(k string) bool {
	_, ok := w.cids[k]
	return ok
}

// waitWants asks again for every CID the repair w waits for, in round and CID order.
func (c *Core) waitWants(w *waiting) []Want {
	keys := slices.Sorted(maps.Keys(w.cids))
	out := make([]Want, 0, len(keys))
	for _, k := range keys {
		m := w.cids[k]
		out = append(out, c.agree.closed[m.round].want(m, []byte(k[8+len(m.peer)+1:])))
	}
	return out
}

// fetchedShard is a shard fetched for a repair, and whether its header's index is the part
// its payload was cut for (placed), as a core signs its own.
type fetchedShard struct {
	s      *verify.Shard
	placed bool
}

// placed reports whether s's header index is its payload's part.
func placed(s *verify.Shard, lim compress.Limits) bool {
	m, err := compress.DecodeShard(s.Payload, lim)
	if err != nil {
		return false
	}
	part, _ := m.Part()
	return part == int(s.Header.Index)
}

// want is the Want of the CID cid of entry e of round cr: with the indexes of its other
// fetched shards that sit where their payloads were cut for (none once cr is let go).
func (cr *closedRound) want(e wantedAt, cid []byte) Want {
	w := Want{Round: e.round, Peer: e.peer, CID: bytes.Clone(cid), Count: uint32(len(e.cids))}
	if cr == nil {
		return w
	}
	for _, other := range e.cids {
		if f := cr.fetched[shardKey(e.peer, other)]; f.s != nil && f.placed && !bytes.Equal(other, cid) {
			w.Taken = append(w.Taken, f.s.Header.Index)
		}
	}
	slices.Sort(w.Taken)
	return w
}

// clash returns the shard fetched for another of e's CIDs under s's index, if any.
func (cr *closedRound) clash(e wantedAt, s *verify.Shard) (cid []byte, f fetchedShard) {
	for _, other := range e.cids {
		if bytes.Equal(other, s.Header.PayloadCID) {
			continue
		}
		if f := cr.fetched[shardKey(e.peer, other)]; f.s != nil && f.s.Header.Index == s.Header.Index {
			return other, f
		}
	}
	return nil, fetchedShard{}
}

// repairShard takes a shard of a closed round inside the window: only when a pending
// repair wants its CID for that round and peer. When the entry's shards are all in, they
// are joined (JoinShards) and held; when nothing more is wanted, the repair runs again.
//
// A shard under an index that a shard fetched for another of the entry's CIDs has already
// cannot join with it: the signer signed two of the entry's payloads for one slot (an
// equivocation, which the node's content store proves when both pass through it), and
// the majority that listed the entry joined it from shards under distinct indexes, which
// other peers serve. Of the two, the one whose index is the part its payload was cut for
// stays (a core signs every shard so), else the first; the other's CID is asked for again,
// with the indexes taken, so that an answer under one of them is refused and the next
// peer asked.
func (c *Core) repairShard(s *verify.Shard) (Ready, error) {
	w := c.agree.wait
	if w == nil {
		return Ready{}, nil
	}
	h := &s.Header
	k := wantKey(h.Round, h.Peer, h.PayloadCID)
	want, ok := w.cids[k]
	if !ok || want.peer != h.Peer || h.Count != uint32(len(want.cids)) || h.Index >= h.Count || !bytes.Equal(verify.PayloadCID(s.Payload), h.PayloadCID) {
		return Ready{}, nil
	}
	cr := c.agree.closed[h.Round]
	if cr.fetched == nil {
		cr.fetched = map[string]fetchedShard{}
	}
	in := fetchedShard{s: s, placed: placed(s, c.cfg.Limits)}
	cid, old := cr.clash(want, s)
	if old.s != nil {
		if !in.placed || old.placed {
			// Asked for again at once when the fetch will refuse this answer; else at the
			// next close, as a repair's wants are (the same answer would come back).
			if again := cr.want(want, h.PayloadCID); slices.Contains(again.Taken, h.Index) {
				return Ready{Fetch: []Want{again}}, nil
			}
			return Ready{}, nil
		}
		delete(cr.fetched, shardKey(h.Peer, cid)) // misplaced: wanted again once s is in
		w.cids[wantKey(h.Round, h.Peer, cid)] = want
		if want.need {
			w.need++
		}
	}
	cr.fetched[shardKey(h.Peer, h.PayloadCID)] = in
	delete(w.cids, k)
	if want.need {
		w.need--
	}
	cr.join(want, c.cfg.Limits)
	var again []Want
	if old.s != nil {
		again = []Want{cr.want(want, cid)}
	}
	if w.need > 0 {
		return Ready{Fetch: again}, nil
	}
	rd, err := c.reconcile(w.from)
	rd.Fetch = append(rd.Fetch, again...)
	return rd, err
}

// join holds the entry's contribution once every one of its shards was fetched.
func (cr *closedRound) join(e wantedAt, lim compress.Limits) {
	shards := make([]*verify.Shard, 0, len(e.cids))
	for _, cid := range e.cids {
		f := cr.fetched[shardKey(e.peer, cid)]
		if f.s == nil {
			return
		}
		shards = append(shards, f.s)
	}
	h := &heldContribution{peer: e.peer, cids: e.cids}
	if ct, err := JoinShards(shards, lim); err == nil && slices.EqualFunc(shardCIDs(shards), e.cids, bytes.Equal) {
		h.msg = ct.Msg
	}
	cr.hold(h)
	for _, cid := range e.cids {
		delete(cr.fetched, shardKey(e.peer, cid))
	}
}

// settle decides the round just closed with the records already seen for it: when they
// give another list than the one it closed with, and no earlier repair is pending, the
// round is closed again at once and the commit in rd replaced. A pending repair asks again
// for what it still waits for.
func (c *Core) settle(r uint64, rd *Ready) error {
	if w := c.agree.wait; w != nil {
		rd.Fetch = append(rd.Fetch, c.waitWants(w)...)
		return nil
	}
	redos, missing, err := c.replay(r)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		rd.Fetch = append(rd.Fetch, c.await(r, missing)...)
		return nil
	}
	if len(redos) == 0 {
		return nil
	}
	rp, err := c.apply(redos)
	if err != nil {
		return err
	}
	c.agree.repairs-- // the round is closed once, with its canonical list
	rd.Commit = rp.Commits[0]
	sum, rec, st := rd.Summary, rd.Commit.Record, c.m.State()
	sum.Included = peersOf(rec.Contributions)
	delete(sum.Rejected, ReasonFiltered)
	for _, e := range rec.Contributions {
		if e.Dropped {
			sum.Rejected[ReasonFiltered]++
		}
	}
	sum.Evidence = len(rec.Evidence)
	sum.ModelRoot, sum.Params = st.Root(), st.Params
	copy(sum.StateRoot[:], rec.NewRoot)
	sum.LedgerRoot = rd.Commit.State.Root()
	return nil
}
