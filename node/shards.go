package node

import (
	"bytes"

	"github.com/libp2p/go-libp2p/core/crypto"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/node/core"
	"github.com/lowband/lowband/node/store"
	"github.com/lowband/lowband/verify"
)

// committedShards takes from the content store the signed shards of every contribution rec
// includes, by round, peer and the CIDs it lists (this node's own too: its validator holds
// them like any other), and counts those it does not hold. Not by CID alone: other slots
// may hold the same payload, as a peer that sends the same update in two rounds does, or
// one that copies another's. What the content store lacks is taken from stored, the shards
// the store holds of the round, if any. A shard is taken only as one of its contribution's:
// its header counts as many shards as the record lists, and its index is below that and
// not taken already (a peer may sign its payload again under other indexes and counts, and
// the store refuses such a shard, which would stop the commit); else it counts as missing.
func committedShards(rec *incentives.Record, content *contentStore, stored []store.Shard) (out []store.Shard, missing int) {
	var kept map[string]storedShard // stored, by peer and payload CID; made when needed
	for _, c := range rec.Contributions {
		n := uint32(len(c.Shards))
		taken := make(map[uint32]bool, n)
		take := func(index, count uint32, data []byte) bool {
			if data == nil || count != n || index >= n || taken[index] {
				return false
			}
			taken[index] = true
			out = append(out, store.Shard{Peer: c.Peer, Index: index, Data: data})
			return true
		}
		for _, cid := range c.Shards {
			if take(content.held(rec.Round, c.Peer, cid)) {
				continue
			}
			if kept == nil {
				kept = byPayload(rec.Round, stored)
			}
			if sh, ok := kept[shardKey(c.Peer, cid)]; ok && take(sh.Index, sh.count, sh.Data) {
				continue
			}
			missing++
		}
	}
	return out, missing
}

// storedShard is a stored shard with its header's count.
type storedShard struct {
	store.Shard
	count uint32
}

// byPayload indexes the stored shards of round by their peer and payload CID (shardKey). A
// shard whose header does not decode, names another round, peer or index than it is
// stored under, or whose payload does not hash to its CID, is left out.
func byPayload(round uint64, stored []store.Shard) map[string]storedShard {
	out := make(map[string]storedShard, len(stored))
	for _, sh := range stored {
		s, err := verify.UnmarshalShard(sh.Data, store.MaxShardBytes)
		if err != nil || s.Header.Round != round || s.Header.Peer != sh.Peer || s.Header.Index != sh.Index ||
			!bytes.Equal(verify.PayloadCID(s.Payload), s.Header.PayloadCID) {
			continue
		}
		out[shardKey(sh.Peer, s.Header.PayloadCID)] = storedShard{Shard: sh, count: s.Header.Count}
	}
	return out
}

// shardKey names a shard of a round by its peer and payload CID (a peer ID's text never
// holds a '/').
func shardKey(peer string, cid []byte) string { return peer + "/" + string(cid) }

// roundShards is committedShards of rec, with the shards the store holds of its round when
// the content store lacks some: a round closed again after a catch-up, whose shards were
// fetched into the replay and stored with it, never passed through the content store, and
// a repair that found them missing there replaced the round without them.
func (n *Node) roundShards(rec *incentives.Record) ([]store.Shard, int) {
	shards, missing := committedShards(rec, n.checks.content, nil)
	if missing == 0 {
		return shards, 0
	}
	stored, err := n.ledger.st.Shards(rec.Round)
	if err != nil {
		n.log.Warn("reading the stored shards of a round", "round", rec.Round, "err", err)
		return shards, missing
	}
	return committedShards(rec, n.checks.content, stored)
}

// commitRound persists a closed round with the shards of the contributions it includes,
// and the node's signed record of it (for an audit), so that a restart can replay it, and
// at the checkpoints' cadence the local state. A round whose shards the node no longer holds is
// committed without them, with a warning: a restart cannot replay past it.
func (n *Node) commitRound(c *core.Commit, key crypto.PrivKey) error {
	shards, missing := n.roundShards(c.Record)
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
// contributions its new record includes (roundShards: the content store's, else those
// stored with the round; a round without all of them is stored without them, with a
// warning, as commitRound does) and the
// node's signed record of it: a repaired round's record is not published (the node's vote
// was its first record), but the node signs what it now holds, for an audit.
func (n *Node) repairRounds(rp *core.Repair, key crypto.PrivKey) error {
	return n.ledger.repair(rp, func(c *core.Commit) ([]byte, []store.Shard) {
		shards, missing := n.roundShards(c.Record)
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
