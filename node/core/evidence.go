package core

import (
	"errors"
	"slices"

	"github.com/lowband/lowband/incentives"
)

// Evidence adds evidence that decoded and passed the checker to what the next record
// includes. Evidence already pending is ignored. Shard equivocation evidence also leaves
// the signer's contribution out of its round when that round is still open here
// (shardEvidence), and record equivocation evidence drops the signer's vote on its round,
// as its two records would (a Ready.Repair or Fetch when that round's list changes): in
// both cases as holding the two signed items would.
func (c *Core) Evidence(e *incentives.Evidence) (Ready, error) {
	if e == nil {
		return Ready{}, errors.New("core: nil evidence")
	}
	c.addEvidence(*e)
	c.shardEvidence(e)
	return c.recordEvidence(e)
}

// shardEvidence leaves out of round r the contribution of a peer that shard equivocation
// evidence e proves signed two different shards for one of its slots in r, when r is one
// this node takes shards for and has not closed (as Shard: from the next to close to the
// end of View's window; not its own). A node that had only one of the two shards would
// otherwise include the contribution: the equivocator's other shard, and the peers'
// forwards of it, may reach it after its last shard, or never (a full validation queue
// drops a message for good). The evidence travels on its own and in every record; a round
// closed already is left to the list vote.
func (c *Core) shardEvidence(e *incentives.Evidence) {
	if e.Kind != incentives.KindEquivocation {
		return
	}
	off, err := e.Claim()
	if err != nil || off.Peer == c.cfg.Self || off.Round < c.nextClose || off.Round > c.nextLocal+c.cfg.Round.Window {
		return
	}
	a, err := c.assembly(off.Round, off.Peer)
	if a == nil || err != nil {
		return
	}
	if a.counted() {
		c.rounds[off.Round].received = powerSum{}
	}
	a.drop(ReasonEquivocation)
}

// pendingMeta is what trimming needs of a pending item, kept so as not to encode it again.
type pendingMeta struct {
	id   incentives.ID
	size int    // encoded bytes
	peer string // the accused
}

// addEvidence adds e to the pending evidence unless it is there already, trimming past the
// bounds. It reports whether e was added.
func (c *Core) addEvidence(e incentives.Evidence) bool {
	id := e.ID()
	if _, dup := c.pendingIDs[id]; dup {
		return false
	}
	c.pending = append(c.pending, e)
	c.keepMeta(id, &e)
	c.trimEvidence()
	return true
}

// setPending replaces the pending evidence with es (bounded).
func (c *Core) setPending(es []incentives.Evidence) {
	c.pending, c.pendingMeta, c.pendingBytes = es, nil, 0
	c.pendingIDs = make(map[incentives.ID]struct{}, len(es))
	for i := range es {
		c.keepMeta(es[i].ID(), &es[i])
	}
	c.trimEvidence()
}

func (c *Core) keepMeta(id incentives.ID, e *incentives.Evidence) {
	m := pendingMeta{id: id, size: len(e.Marshal()), peer: accused(e)}
	c.pendingMeta = append(c.pendingMeta, m)
	c.pendingIDs[id] = struct{}{}
	c.pendingBytes += m.size
}

// trimEvidence drops pending evidence past the bounds, each time the oldest item against
// the peer with the most bytes pending (then the one with the least at stake, then the one
// whose oldest item is oldest). Any attested key can sign valid evidence against itself
// without limit (an equivocation per shard index, an invalid payload per index): it pushes
// out only its own.
func (c *Core) trimEvidence() {
	for len(c.pending) > c.cfg.MaxPendingEvidence || c.pendingBytes > c.cfg.MaxPendingEvidenceBytes {
		i := c.evictable()
		c.pendingBytes -= c.pendingMeta[i].size
		delete(c.pendingIDs, c.pendingMeta[i].id)
		c.pending = slices.Delete(c.pending, i, i+1)
		c.pendingMeta = slices.Delete(c.pendingMeta, i, i+1)
	}
}

// evictable returns the index of the pending item trimEvidence drops.
func (c *Core) evictable() int {
	bytes := map[string]int{}
	for _, m := range c.pendingMeta {
		bytes[m.peer] += m.size
	}
	seen := make(map[string]bool, len(bytes))
	best, bestPeer := 0, c.pendingMeta[0].peer
	for i, m := range c.pendingMeta {
		if seen[m.peer] { // not the peer's oldest item
			continue
		}
		seen[m.peer] = true
		if n, b := bytes[m.peer], bytes[bestPeer]; n > b || n == b && c.atStake(m.peer) < c.atStake(bestPeer) {
			best, bestPeer = i, m.peer
		}
	}
	return best
}

// accused is the peer evidence is about (Evidence.Claim); "" for evidence out of shape,
// which no checker passes.
func accused(e *incentives.Evidence) string {
	off, _ := e.Claim()
	return off.Peer
}

// atStake is what peer holds in the ledger in force, stake plus balance (saturated).
func (c *Core) atStake(peer string) uint64 {
	a := c.ledger.Account(peer)
	if s := a.Stake + a.Balance; s >= a.Stake {
		return s
	}
	return ^uint64(0)
}
