package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/lowband/lowband/incentives"
)

// Bounds of the stored shards. A shard is one gossip message; a round holds at most what a
// record lists.
const (
	// MaxShardBytes bounds one stored shard: the gossip cap.
	MaxShardBytes = 1 << 20
	// maxShardsPerRound bounds the shards read back for one round.
	maxShardsPerRound = incentives.MaxContributions * incentives.MaxShardsPerContribution
)

// ErrShardEntry: a stored shard entry that cannot be what Commit wrote (a bad key, an empty
// or oversized value, more entries than a record lists): the disk was damaged or edited.
var ErrShardEntry = errors.New("stored shard entry out of form")

var bucketShards = []byte("shards")

// Shard is one marshalled signed shard (verify.Shard.Marshal) of a contribution a
// committed round included, named by its peer and index. The store checks its form and
// size only; what the bytes say is the reader's to check.
type Shard struct {
	Peer  string
	Index uint32
	Data  []byte
}

// shardKey is round, then the peer's length and the peer (historyPrefix), then the index:
// a round's shards are one key range, sorted by peer and index.
func shardKey(round uint64, peer string, index uint32) ([]byte, error) {
	p, err := historyPrefix(peer)
	if err != nil {
		return nil, err
	}
	k := append(roundKey(round), p...)
	return binary.BigEndian.AppendUint32(k, index), nil
}

// parseShardKey splits a key of round's range into peer and index.
func parseShardKey(k []byte) (peer string, index uint32, ok bool) {
	if len(k) < 8+2+4 {
		return "", 0, false
	}
	n := int(binary.BigEndian.Uint16(k[8:10]))
	if n == 0 || len(k) != 8+2+n+4 {
		return "", 0, false
	}
	return string(k[10 : 10+n]), binary.BigEndian.Uint32(k[10+n:]), true
}

// checkShards refuses shards Commit must not write for rec: of a peer the record does not
// list, an index beyond what a record lists, empty or over MaxShardBytes, or twice.
func checkShards(rec *incentives.Record, shards []Shard) error {
	listed := make(map[string]int, len(rec.Contributions))
	for _, c := range rec.Contributions {
		listed[c.Peer] = len(c.Shards)
	}
	type slot struct {
		peer  string
		index uint32
	}
	seen := make(map[slot]bool, len(shards))
	for _, sh := range shards {
		n, ok := listed[sh.Peer]
		switch {
		case !ok:
			return fmt.Errorf("shard of %s: the record of round %d does not list it", sh.Peer, rec.Round)
		case int64(sh.Index) >= int64(n) || len(sh.Data) == 0 || len(sh.Data) > MaxShardBytes:
			return fmt.Errorf("shard %d of %s (%d bytes): the record of round %d lists %d", sh.Index, sh.Peer, len(sh.Data), rec.Round, n)
		case seen[slot{sh.Peer, sh.Index}]:
			return fmt.Errorf("shard %d of %s given twice for round %d", sh.Index, sh.Peer, rec.Round)
		}
		seen[slot{sh.Peer, sh.Index}] = true
	}
	return nil
}

// putShards writes the shards of round r in tx.
func putShards(tx *bolt.Tx, r uint64, shards []Shard) error {
	b := tx.Bucket(bucketShards)
	for _, sh := range shards {
		k, err := shardKey(r, sh.Peer, sh.Index)
		if err != nil {
			return err
		}
		if err := b.Put(k, sh.Data); err != nil {
			return err
		}
	}
	return nil
}

// Shards returns the shards stored for round, sorted by peer and index; none when the round
// has none (not committed, pruned, or committed without them). A damaged entry is an error
// wrapping ErrShardEntry and naming the round. The returned bytes are copies.
func (s *Store) Shards(round uint64) ([]Shard, error) {
	var out []Shard
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketShards).Cursor()
		prefix := roundKey(round)
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			peer, index, ok := parseShardKey(k)
			switch {
			case !ok:
				return fmt.Errorf("%w: round %d: a key of %d bytes", ErrShardEntry, round, len(k))
			case len(v) == 0 || len(v) > MaxShardBytes:
				return fmt.Errorf("%w: round %d: shard %d of %s is %d bytes (at most %d)", ErrShardEntry, round, index, peer, len(v), MaxShardBytes)
			case len(out) == maxShardsPerRound:
				return fmt.Errorf("%w: round %d: more than %d shards", ErrShardEntry, round, maxShardsPerRound)
			}
			out = append(out, Shard{Peer: peer, Index: index, Data: slices.Clone(v)})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// deleteShards drops the stored shards of round r in tx (a round replaced by Reorg).
func deleteShards(tx *bolt.Tx, r uint64) error {
	c := tx.Bucket(bucketShards).Cursor()
	prefix := roundKey(r)
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Seek(prefix) {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}

// PruneShards drops the stored shards of the rounds before round: those a checkpoint at
// round makes unnecessary for a replay.
func (s *Store) PruneShards(round uint64) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketShards).Cursor()
		end := roundKey(round)
		for k, _ := c.First(); k != nil && bytes.Compare(k, end) < 0; k, _ = c.First() {
			if err := c.Delete(); err != nil {
				return err
			}
		}
		return nil
	})
}
