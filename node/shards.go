package node

import (
	"github.com/libp2p/go-libp2p/core/crypto"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/node/core"
	"github.com/lowband/lowband/node/store"
)

// committedShards takes from the content store the signed shards of every contribution rec
// includes, by round, peer and the CIDs it lists (this node's own too: its validator holds
// them like any other), and counts those it does not hold. Not by CID alone: other slots
// may hold the same payload, as a peer that sends the same update in two rounds does, or
// one that copies another's.
func committedShards(rec *incentives.Record, content *contentStore) (out []store.Shard, missing int) {
	for _, c := range rec.Contributions {
		for _, cid := range c.Shards {
			index, data := content.held(rec.Round, c.Peer, cid)
			if data == nil {
				missing++
				continue
			}
			out = append(out, store.Shard{Peer: c.Peer, Index: index, Data: data})
		}
	}
	return out, missing
}

// commitRound persists a closed round with the shards of the contributions it includes,
// and the node's signed record of it (for an audit), so that a restart can replay it, and
// at the checkpoints' cadence the local state. A round whose shards the node no longer holds is
// committed without them, with a warning: a restart cannot replay past it.
func (n *Node) commitRound(c *core.Commit, key crypto.PrivKey) error {
	shards, missing := committedShards(c.Record, n.checks.content)
	if missing > 0 {
		n.log.Warn("committing a round without all of its shards: a restart cannot replay it", "round", c.Record.Round, "missing", missing)
	}
	signed, err := n.signedOf(c, key)
	if err != nil {
		n.log.Warn("signing the record to keep: an audit cannot check this round's signature", "round", c.Record.Round, "err", err)
	}
	if err := n.ledger.commit(c, signed, shards...); err != nil {
		return err
	}
	n.saveLocal(c.Record.Round + 1)
	return nil
}

// repairRounds persists the rounds a repair closed again, each with the shards of the
// contributions its new record includes (those the content store holds; a round without
// all of them is stored without them, with a warning, as commitRound does) and the
// node's signed record of it: a repaired round's record is not published (the node's vote
// was its first record), but the node signs what it now holds, for an audit.
func (n *Node) repairRounds(rp *core.Repair, key crypto.PrivKey) error {
	return n.ledger.repair(rp, func(c *core.Commit) ([]byte, []store.Shard) {
		shards, missing := committedShards(c.Record, n.checks.content)
		if missing > 0 {
			n.log.Warn("repairing a round without all of its shards: a restart cannot replay it", "round", c.Record.Round, "missing", missing)
		}
		signed, err := n.signedOf(c, key)
		if err != nil {
			n.log.Warn("signing the repaired record to keep: an audit cannot check this round's signature", "round", c.Record.Round, "err", err)
		}
		return signed, shards
	})
}

// signedOf is the node's signed record of a committed round, kept with the commit: the
// one the core published (Commit.Signed, its vote), else the record signed here with the
// node's identity key as a committed record, not a vote (incentives.SignCommitted: a
// repair publishes nothing, and a second vote for the round, served to whoever asks what
// the node committed, would prove a vote cast twice against it).
func (n *Node) signedOf(c *core.Commit, key crypto.PrivKey) ([]byte, error) {
	if c.Signed != nil {
		return c.Signed, nil
	}
	sr, err := incentives.SignCommitted(key, n.network, n.opts.Spec.Run, c.Record)
	if err != nil {
		return nil, err
	}
	return sr.Marshal(), nil
}
