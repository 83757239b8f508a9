package node

import (
	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/node/core"
	"github.com/lowband/lowband/node/store"
)

// heldByCID returns the held shard whose header names payload CID cid and its slot; nil
// bytes if none. The bytes are shared.
func (c *contentStore) heldByCID(cid []byte) (slot, []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k, ok := c.byCID[string(cid)]
	if !ok {
		return slot{}, nil
	}
	return k, c.bySlot[k].data
}

// committedShards takes from the content store the signed shards of every contribution rec
// includes, by the CIDs it lists (this node's own too: its validator holds them like any
// other), and counts those it does not hold.
func committedShards(rec *incentives.Record, content *contentStore) (out []store.Shard, missing int) {
	for _, c := range rec.Contributions {
		for _, cid := range c.Shards {
			k, data := content.heldByCID(cid)
			if data == nil || k.round != rec.Round || k.peer != c.Peer {
				missing++
				continue
			}
			out = append(out, store.Shard{Peer: c.Peer, Index: k.index, Data: data})
		}
	}
	return out, missing
}

// commitRound persists a closed round with the shards of the contributions it includes,
// so that a restart can replay it, and at the checkpoints' cadence the local state. A round whose shards the node no longer holds is
// committed without them, with a warning: a restart cannot replay past it.
func (n *Node) commitRound(c *core.Commit) error {
	shards, missing := committedShards(c.Record, n.checks.content)
	if missing > 0 {
		n.log.Warn("committing a round without all of its shards: a restart cannot replay it", "round", c.Record.Round, "missing", missing)
	}
	if err := n.ledger.commit(c, shards...); err != nil {
		return err
	}
	n.saveLocal(c.Record.Round + 1)
	return nil
}

// repairRounds persists rounds closed again (a repair) with the shards of the
// contributions each includes, as commitRound does, so that a restart replays the
// repaired rounds; the checkpoints after the first of them are dropped with the old rounds.
func (n *Node) repairRounds(rp *core.Repair) error {
	shards := make([][]store.Shard, len(rp.Commits))
	for i, c := range rp.Commits {
		var missing int
		if shards[i], missing = committedShards(c.Record, n.checks.content); missing > 0 {
			n.log.Warn("repairing a round without all of its shards: a restart cannot replay it", "round", c.Record.Round, "missing", missing)
		}
	}
	return n.ledger.repair(rp, shards)
}
