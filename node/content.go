package node

import (
	"bytes"
	"encoding/binary"
	"sync"

	"github.com/lowband/lowband/verify"
)

// slot names one shard of a contribution: its round, its peer and its index.
type slot struct {
	round uint64
	peer  string
	index uint32
}

// contentStore keeps the bytes of the recent shards the node accepted (its own and its
// peers'), so that it can serve them by payload CID or by slot, and so that a shard that
// arrives twice (by gossip, from the stash, by fetch) reaches the loop once. It keeps the
// first shard of a slot and whether another was seen, and is bounded in bytes: over the
// bound it drops the oldest shard of the peer holding the most bytes (counting the new
// shard), and refuses the new shard when that peer is its own and holds only later rounds,
// so that one peer's flood pushes out only its own shards; the loop prunes by round as
// rounds close. It holds only shards that passed every check. Safe for concurrent use.
type contentStore struct {
	maxBytes int

	mu       sync.Mutex
	bytes    int
	bySlot   map[slot]heldShard
	byCID    map[string]slot // by cidKey: the slot whose held shard names that payload
	byRound  map[uint64]slotSet
	byPeer   map[string]slotSet // each peer's held slots
	peerLoad map[string]int     // each peer's held bytes
}

// defaultContentBytes bounds a content store: a few rounds of every peer's contribution.
const defaultContentBytes = 256 << 20

func newContentStore(maxBytes int) *contentStore {
	if maxBytes <= 0 {
		maxBytes = defaultContentBytes
	}
	return &contentStore{maxBytes: maxBytes, bySlot: make(map[slot]heldShard), byCID: make(map[string]slot),
		byRound: make(map[uint64]slotSet), byPeer: make(map[string]slotSet), peerLoad: make(map[string]int)}
}

// slotSet is a set of slots: held shards are dropped one by one, in any order.
type slotSet map[slot]struct{}

// addSlot adds k to the set of key in m.
func addSlot[K comparable](m map[K]slotSet, key K, k slot) {
	if m[key] == nil {
		m[key] = slotSet{}
	}
	m[key][k] = struct{}{}
}

// removeSlot removes k from the set of key in m, and the set when it empties.
func removeSlot[K comparable](m map[K]slotSet, key K, k slot) {
	delete(m[key], k)
	if len(m[key]) == 0 {
		delete(m, key)
	}
}

// heldShard is a shard's encoding, its header's signing bytes and its payload CID, and
// whether a shard with another header for its slot was seen (its signer equivocated).
type heldShard struct {
	data        []byte
	head        []byte
	cid         string
	count       uint32 // the header's count of the contribution's shards
	equivocated bool
}

// headerBytes is the signing encoding of s's header: two shards are one and the same
// when their headers are (the header binds the payload by its CID), whatever their
// signatures. Nil for a header that does not encode (no validator passes one).
func headerBytes(s *verify.Shard) []byte {
	b, _ := s.Header.SigningBytes()
	return b
}

func slotOf(h *verify.ShardHeader) slot { return slot{round: h.Round, peer: h.Peer, index: h.Index} }

// What put found of a shard.
type putResult int

const (
	putNew      putResult = iota // not seen before: kept if it fits
	putSame                      // the bytes held for its slot
	putConflict                  // the first shard with another header for a held slot (equivocation): not kept
	putRepeated                  // a further one for that slot: the conflict is known
	putResigned                  // the held shard's header (or a vote held) under another signature: the same content
)

// put keeps data, the encoding of s, unless the store holds a shard of its slot already,
// and says what it found. A new shard that does not fit is not kept. Shards are told apart
// by their headers: a signer can sign one header again and again (ed25519 with a fresh
// nonce), and each copy would otherwise pass as the slot's conflict, marking it so that
// the shard that does prove an equivocation went unchecked as a repeat.
func (c *contentStore) put(s *verify.Shard, data []byte) putResult {
	k := slotOf(&s.Header)
	head := headerBytes(s)
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.bySlot[k]; ok {
		switch {
		case bytes.Equal(old.data, data):
			return putSame
		case bytes.Equal(old.head, head):
			return putResigned
		case old.equivocated:
			return putRepeated
		}
		old.equivocated = true
		c.bySlot[k] = old
		return putConflict
	}
	if !c.makeRoom(len(data), k) {
		return putNew
	}
	c.bySlot[k] = heldShard{data: bytes.Clone(data), head: head, cid: string(s.Header.PayloadCID), count: s.Header.Count}
	if ck := cidKey(k.round, k.peer, s.Header.PayloadCID); c.byCID[ck] == (slot{}) {
		c.byCID[ck] = k // the first slot of a payload keeps it: a later one of the same signer is its own doing
	}
	addSlot(c.byRound, k.round, k)
	addSlot(c.byPeer, k.peer, k)
	c.peerLoad[k.peer] += len(data)
	c.bytes += len(data)
	return putNew
}

// differs reports whether the store holds a shard for s's slot under another header than
// s's, whose conflict with another is not known yet.
func (c *contentStore) differs(s *verify.Shard) bool {
	head := headerBytes(s)
	c.mu.Lock()
	defer c.mu.Unlock()
	old, ok := c.bySlot[slotOf(&s.Header)]
	return ok && !old.equivocated && !bytes.Equal(old.head, head)
}

// remove undoes the put of data, the encoding of s, that the loop never received: it
// drops the shard of s's slot if it is data, else forgets that the slot had a conflict.
func (c *contentStore) remove(s *verify.Shard, data []byte) {
	k := slotOf(&s.Header)
	c.mu.Lock()
	defer c.mu.Unlock()
	old, ok := c.bySlot[k]
	switch {
	case ok && bytes.Equal(old.data, data):
		c.drop(k, old)
	case ok:
		old.equivocated = false
		c.bySlot[k] = old
	}
}

// makeRoom drops shards until n more bytes, of the shard for slot k, fit: each time the
// oldest of the peer holding the most bytes, counting the new shard's. It reports false,
// having dropped what it dropped, when that peer is k's and holds nothing older than k.
// c.mu is held.
func (c *contentStore) makeRoom(n int, k slot) bool {
	for c.bytes+n > c.maxBytes {
		heaviest, load := k.peer, c.peerLoad[k.peer]+n
		for p, l := range c.peerLoad {
			if l > load || l == load && p < heaviest {
				heaviest, load = p, l
			}
		}
		oldest, any := slot{}, false
		for x := range c.byPeer[heaviest] {
			if !any || x.round < oldest.round || x.round == oldest.round && x.index < oldest.index {
				oldest, any = x, true
			}
		}
		if !any || heaviest == k.peer && oldest.round >= k.round {
			return false
		}
		c.drop(oldest, c.bySlot[oldest])
	}
	return true
}

// shard returns the held shard of a slot, nil if none. The bytes are shared.
func (c *contentStore) shard(k slot) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bySlot[k].data
}

// held returns the index, the header's count and the bytes of the held shard of round and
// peer whose header names payload CID cid; nil bytes if none. The bytes are shared. (A peer
// may sign one payload in several slots of its own; which of them this is depends on the
// order they came in: a caller checks index and count against what it wants.)
func (c *contentStore) held(round uint64, peer string, cid []byte) (index, count uint32, data []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if k, ok := c.byCID[cidKey(round, peer, cid)]; ok {
		h := c.bySlot[k]
		return k.index, h.count, h.data
	}
	return 0, 0, nil
}

// cidKey names a payload by its round, its signer and its CID: not by CID alone, as other
// slots may carry the same payload (a peer sending the same update in two rounds, or a
// copy of another's). The round (8 bytes), then shardKey.
func cidKey(round uint64, peer string, cid []byte) string {
	return string(binary.BigEndian.AppendUint64(nil, round)) + shardKey(peer, cid)
}

// prune drops the shards of rounds before round.
func (c *contentStore) prune(round uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for r := range c.byRound {
		if r < round {
			c.dropRound(r)
		}
	}
}

// dropRound drops every shard of round r. c.mu is held.
func (c *contentStore) dropRound(r uint64) {
	for k := range c.byRound[r] {
		c.drop(k, c.bySlot[k])
	}
}

// drop forgets one held shard. c.mu is held.
func (c *contentStore) drop(k slot, old heldShard) {
	delete(c.bySlot, k)
	removeSlot(c.byRound, k.round, k)
	removeSlot(c.byPeer, k.peer, k)
	if ck := cidKey(k.round, k.peer, []byte(old.cid)); c.byCID[ck] == k {
		delete(c.byCID, ck)
	}
	c.bytes -= len(old.data)
	c.peerLoad[k.peer] -= len(old.data)
	if c.byPeer[k.peer] == nil {
		delete(c.peerLoad, k.peer)
	}
}
