package core

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/training/round"
)

// tryClose closes the next round when the machine and the deadline allow it, adding to rd.
// At most one round closes per event (a Ready holds one commit); Tick closes the next. A
// round this node has no contribution for (skipped on a restart, or after Finish) closes
// on the other contributors' stake alone: its own is not expected, so the round closes
// once every other staked contribution is in, or by the adaptive deadline with a quorum
// of the others' stake.
func (c *Core) tryClose(now time.Time, rd Ready) (Ready, error) {
	r, ok := c.m.Closable()
	if !ok {
		return rd, nil
	}
	ri := c.rounds[r]
	if ri == nil {
		ri = &roundIn{peers: map[string]*assembly{}}
		c.rounds[r] = ri
	}
	if ri.since.IsZero() {
		ri.since = now
	}
	start := c.clockOf(r, ri)
	received, total := c.stake(r)
	if c.own[r] == nil { // no work of its own for r: what it waits for is the others' stake
		total -= min(total, c.ledger.Power(c.cfg.Self))
	}
	closable := c.deadline.Closable(now, start, received, total, total > 0 && received == total)
	if closable && ri.ready.IsZero() {
		ri.ready = now
	}
	if !closable || c.aheadOfRecords(now, start, ri.ready, r) {
		// Missing slots are fetched once the round waits on them. A round that may close
		// during the next round's work (outer.merge) is checked from that work's start,
		// while its contributions still travel: they are fetched from the point the round
		// would be closable without the merge, the work's end, as without it.
		if !ri.fetched && !c.m.Merging() {
			ri.fetched = true
			rd.Fetch = c.wants(r)
		}
		return rd, nil
	}
	return c.close(now, r, rd)
}

// aheadOfRecords reports whether round r must wait for the records of round r-Depth,
// the oldest round its close leaves in the repair window. It waits while that round has
// no records yet that carry more than half of the voting power, until the deadline's
// maximum has passed since start, r's clock: a node that closes rounds faster than its
// peers' records reach it (restarted behind peers whose shards it holds, or whose gossip
// to it lags) would otherwise push a round it closed differently out of its window
// before their records arrive, and stay on a lineage of its own; the records of a round
// normally come within a round of it. With no majority online, rounds close at the
// maximum, as they would anyway. It also waits, until the deadline's minimum has passed
// since ready (when r's deadline first let it close), while records it knows are on
// their way could still change that round's list (pendingVotes): a majority of records
// decides a list only when the rest cannot tip any entry of it, and when a round's
// contributions reached the nodes very unevenly and the rounds after it close at once
// (their deadlines passed while it waited), a node that went on with the first majority
// left the round before the rest came and kept a list the others did not (in a 100-node
// swarm, dozens of lineages). Only signers whose records of later rounds it holds are
// waited for: one that never sends a record (silent, or off the network) holds nothing
// up, and one that withholds its record of a round while sending the next ones holds the
// close up for the minimum at most, past the deadline. Neither wait is needed while a
// repair that waits for shards keeps the round in the window.
func (c *Core) aheadOfRecords(now, start, ready time.Time, r uint64) bool {
	if r < c.cfg.Depth || now.Sub(start) >= c.deadline.Config().Max {
		return false
	}
	u := r - c.cfg.Depth
	cr := c.agree.closed[u]
	if cr == nil || u >= c.repairFromAt(r+1) {
		return false // closed before this Core started, or still in the window after r closes
	}
	t := c.tallyOf(u, cr.ledger) // decide's quorum, without the list: this runs on every event while r waits
	all := cr.ledger.TotalPower()
	if t.total == 0 || t.total <= all-t.total {
		return true
	}
	// Most often not even every vote still out could tip an entry: no need to look
	// for the ones on their way.
	return now.Sub(ready) < c.deadline.Config().Min && t.open(all-t.total) && t.open(c.pendingVotes(u, cr.ledger))
}

// pendingVotes is the voting power, by led, of the signers other than this node without
// a vote of round u (nor a pair of records that dropped it) whose votes of a later round
// this Core holds: a node closes its rounds in order and publishes a vote at each close,
// so their votes of u exist and are on their way (the validators ask for the records a
// signer's later record shows missing). This node's own vote of a round it was seeded
// with may be missing for good. Kept until the votes change (agreement.gen).
func (c *Core) pendingVotes(u uint64, led *incentives.State) uint64 {
	if m := c.agree.pending; m.led == led && m.u == u && m.gen == c.agree.gen {
		return m.power
	}
	seen := map[string]bool{}
	var w uint64
	for v, votes := range c.agree.votes {
		if v <= u {
			continue
		}
		for signer := range votes {
			if seen[signer] || signer == c.cfg.Self || c.agree.votes[u][signer] != nil || c.agree.twice[u][signer] {
				continue
			}
			seen[signer] = true
			w = addSat(w, led.Power(signer))
		}
	}
	c.agree.pending = pendingMemo{u: u, gen: c.agree.gen, power: w, led: led}
	return w
}

// stake returns the voting power of the contributors complete for round r (this node's own
// included once it is done) and the total voting power, by the ledger in force. Both are
// kept until the ledger or round r's complete contributions change: every event asks while
// a round waits for its deadline, and the round may hold thousands of contributions.
func (c *Core) stake(r uint64) (received, total uint64) {
	if c.total.ledger != c.ledger {
		c.total = powerSum{ledger: c.ledger, own: false, sum: c.ledger.TotalPower()}
	}
	ri, own := c.rounds[r], c.own[r] != nil
	if ri != nil && ri.received.ledger == c.ledger && ri.received.own == own {
		return ri.received.sum, c.total.sum
	}
	add := func(p uint64) {
		if received+p >= received {
			received += p
		} else {
			received = ^uint64(0)
		}
	}
	if own {
		add(c.ledger.Power(c.cfg.Self))
	}
	if ri != nil {
		for peer, a := range ri.peers { // integer sums: the order does not matter
			if a.counted() {
				add(c.ledger.Power(peer))
			}
		}
		ri.received = powerSum{ledger: c.ledger, own: own, sum: received}
	}
	return received, c.total.sum
}

// powerSum is a sum of voting power by one ledger state (nil: none yet); own says whether
// this node's own contribution was in it.
type powerSum struct {
	ledger *incentives.State
	own    bool
	sum    uint64
}

// close closes round r: weights from the ledger, the machine's close, the model root, the
// ledger's record; fills rd with what to persist, publish and report; keeps what closing
// r again needs, and settles r at once when the records already seen for it give another
// list.
func (c *Core) close(now time.Time, r uint64, rd Ready) (Ready, error) {
	pre, preLedger := c.m.Snapshot(), c.ledger // kept to close r again, never modified
	c.releaseLeaving(r + 1)
	weights, rejected := c.weights(r)
	mr, err := c.m.CloseWith(r, weights)
	if err != nil {
		return Ready{}, fmt.Errorf("core: closing round %d: %w", r, err)
	}
	if mr.Shift != nil {
		rd.Shift = &Shift{Round: r + 1, Params: mr.Shift}
	}
	if n := len(mr.Closed.Rejected); n > 0 {
		rejected[ReasonDecode] += n
	}
	if n := len(mr.Closed.Dropped); n > 0 {
		rejected[ReasonFiltered] += n
	}
	modelRoot := c.m.Root()
	contribs := listed(mr.Closed, func(p string) [][]byte { return c.cids(r, p) })
	closed, err := c.ledger.Build(contribs, c.pending, modelRoot[:], c.cfg.Checker)
	if err != nil { // only a malformed inclusion list, which this code never makes
		return Ready{}, fmt.Errorf("core: building the record of round %d: %w", r, err)
	}
	msg, err := c.recordMessage(closed.Record)
	if err != nil {
		return Ready{}, err
	}
	c.ledger = closed.State
	c.setPending(closed.Deferred)
	rd.Commit = &Commit{Record: closed.Record, State: closed.State, Events: closed.Events}
	if c.cfg.Identity != nil {
		rd.Commit.Signed = msg.Data
	}
	rd.Publish = append(rd.Publish, msg)
	if err := c.summarise(now, r, mr, closed, rejected, modelRoot, &rd); err != nil {
		return Ready{}, err
	}
	c.nextClose, c.lastIn = r+1, time.Time{}
	if ri := c.rounds[r]; ri != nil {
		c.lastIn = ri.lastIn(closed.Record.Contributions, preLedger)
	}
	c.keepClosed(r, pre, preLedger, closed.Record, msg)
	delete(c.rounds, r)
	delete(c.own, r)
	if err := c.settle(r, &rd); err != nil {
		return Ready{}, err
	}
	if c.cfg.Identity != nil {
		rd.Commit.Vote = msg.Data
	}
	return rd, nil
}

// recordMessage is the node's record as the records topic carries it: signed by the
// node's identity, or bare without one.
func (c *Core) recordMessage(rec *incentives.Record) (Message, error) {
	if c.cfg.Identity == nil {
		return Message{Kind: KindRecords, Data: rec.Marshal()}, nil
	}
	sr, err := incentives.SignRecord(c.cfg.Identity, c.cfg.Network, c.cfg.Run, rec)
	if err != nil {
		return Message{}, fmt.Errorf("core: signing the record of round %d: %w", rec.Round, err)
	}
	return Message{Kind: KindRecords, Data: sr.Marshal()}, nil
}

// summarise fills rd's Summary and the next local work of a closed round.
func (c *Core) summarise(now time.Time, r uint64, mr round.Ready, closed incentives.Closed, rejected map[string]int, modelRoot [32]byte, rd *Ready) error {
	sum := &Summary{
		Round: r, Included: mr.Closed.Included, Filtered: mr.Closed.Dropped, Rejected: rejected, Evidence: len(closed.Record.Evidence),
		Deadline: c.deadline.Current(), ModelRoot: modelRoot, LedgerRoot: closed.State.Root(),
		Params: mr.Closed.Params, Ranks: c.ranks(),
	}
	copy(sum.StateRoot[:], closed.Record.NewRoot)
	if o := c.own[r]; o != nil {
		sum.ContributionBytes = o.bytes
	}
	if ri := c.rounds[r]; ri != nil && !ri.ready.IsZero() {
		sum.Held = max(now.Sub(ri.ready), 0)
	}
	if c.own[r] != nil && c.leftOut(r) {
		c.realign = true // its next start is a round late too: skip it (late.go)
	}
	if mr.Start != nil {
		before := rd.Train
		if err := c.startChecked(mr.Start, rd); err != nil {
			return err
		}
		if rd.Train != before && !c.blocked.IsZero() {
			sum.Stall = max(now.Sub(c.blocked), 0)
			c.blocked = time.Time{}
		}
	}
	rd.Summary = sum
	return nil
}

// listed is the inclusion list of a closed round: every included peer with its shards'
// CIDs, marked Dropped when the aggregation rule left it out whole (the ledger gives it
// nothing). Every node that closes the round from the same list finds the same flags.
func listed(cl *round.Closed, cids func(peer string) [][]byte) []incentives.Contribution {
	out := make([]incentives.Contribution, 0, len(cl.Included))
	for _, p := range cl.Included {
		_, dropped := slices.BinarySearch(cl.Dropped, p)
		out = append(out, incentives.Contribution{Peer: p, Shards: cids(p), Dropped: dropped})
	}
	return out
}

// weights decides who counts in round r, by the ledger in force: only complete
// contributions that were not dropped, through admit and WeightsOf. It also counts, by
// reason, the contributions left out.
func (c *Core) weights(r uint64) (map[string]float64, map[string]int) {
	rejected := map[string]int{}
	ri := c.rounds[r]
	if ri == nil {
		ri = &roundIn{}
	}
	for _, a := range ri.peers {
		switch {
		case a.dropped != "":
			rejected[a.dropped]++
		case !a.done:
			rejected[ReasonIncomplete]++
		}
	}
	var list []incentives.Contribution
	for _, p := range c.m.Pending(r) {
		if a, ok := ri.peers[p]; p != c.cfg.Self && (!ok || !a.done || a.dropped != "") {
			continue // given to the machine, then dropped (equivocation): counted above
		}
		list = append(list, incentives.Contribution{Peer: p, Shards: c.cids(r, p)})
	}
	in := admit(c.ledger, list, rejected)
	return WeightsOf(c.ledger, peersOf(in)), rejected
}

// admit is who of an inclusion list counts by the ledger led, for a live close and a
// repair alike: a jailed peer (this node too) is left out, and an unstaked one when the
// network gives unstaked peers no weight; of the rest at most what a record lists
// (incentives.MaxContributions, whose encoding fits incentives.MaxContributionsSize), by
// voting power then peer ID. What it leaves out is counted in rejected by reason.
func admit(led *incentives.State, list []incentives.Contribution, rejected map[string]int) []incentives.Contribution {
	unstaked := led.Params.UnstakedWeightPPM > 0
	var in []incentives.Contribution
	for _, e := range list {
		switch {
		case led.Jailed(e.Peer):
			rejected[ReasonJailed]++
		case led.Power(e.Peer) == 0 && !unstaked:
			rejected[ReasonWeight]++
		default:
			in = append(in, e)
		}
	}
	slices.SortFunc(in, func(a, b incentives.Contribution) int {
		return cmp.Or(cmp.Compare(led.Power(b.Peer), led.Power(a.Peer)), cmp.Compare(a.Peer, b.Peer))
	})
	size := 9 // the list's header
	for i, e := range in {
		size += contributionSize(e.Peer, e.Shards) + droppedSize // room for the flag: whether it is set is known after the close
		if i == incentives.MaxContributions || size > incentives.MaxContributionsSize {
			rejected[ReasonCap] += len(in) - i
			return in[:i]
		}
	}
	return in
}

// contributionSize is the encoded size of one entry of a record's inclusion list
// (incentives.Contribution in canonical CBOR): a map of two small keys, the peer as a text
// string and the CIDs as a list of byte strings.
func contributionSize(peer string, cids [][]byte) int {
	n := 1 + 1 + cborHead(len(peer)) + len(peer) + 1 + cborHead(len(cids))
	for _, c := range cids {
		n += cborHead(len(c)) + len(c)
	}
	return n
}

// droppedSize is what marking an entry Dropped adds to its encoding: the key and the value
// (the map's head stays one byte).
const droppedSize = 2

// cborHead is the size of a CBOR item head carrying the length n.
func cborHead(n int) int {
	switch {
	case n < 24:
		return 1
	case n < 1<<8:
		return 2
	case n < 1<<16:
		return 3
	case n < 1<<32:
		return 5
	}
	return 9
}

// cids returns the payload CIDs of peer's contribution to round r, sorted.
func (c *Core) cids(r uint64, peer string) [][]byte {
	if peer == c.cfg.Self {
		if o := c.own[r]; o != nil {
			out := slices.Clone(o.cids)
			slices.SortFunc(out, bytes.Compare)
			return out
		}
		return nil
	}
	if ri := c.rounds[r]; ri != nil {
		if a := ri.peers[peer]; a != nil {
			return a.cids
		}
	}
	return nil
}

// ranks is the codec rank of each tensor of this node's last encoding.
func (c *Core) ranks() []int {
	st := c.m.CodecStats()
	out := make([]int, len(st))
	for i, s := range st {
		out[i] = s.Rank
	}
	return out
}

// WeightsOf is the weight of each included peer by the ledger led: a staked peer 1, an
// unstaked one the network's unstaked weight (left out at 0), a jailed one left out. Every
// node computes it alike for the same ledger, which closing a round and repairing one both
// use.
func WeightsOf(led *incentives.State, included []string) map[string]float64 {
	unstaked := float64(led.Params.UnstakedWeightPPM) / incentives.PPM
	weights := make(map[string]float64, len(included))
	for _, p := range included {
		switch {
		case led.Jailed(p):
		case led.Power(p) > 0:
			weights[p] = 1
		case unstaked > 0:
			weights[p] = unstaked
		}
	}
	return weights
}
