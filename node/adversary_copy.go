package node

import (
	"context"
	"crypto/ed25519"
	"maps"
	"slices"
	"sync"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/verify"
)

// Sizes of a copier's memory.
const (
	// copyVictims is how many peers' shards of one round a copier keeps: it needs one
	// complete contribution.
	copyVictims = 8
	// copyAhead is how many rounds past its own latest a copier keeps shards of: its peers
	// may be ahead of it.
	copyAhead = 4
)

// copier is the memory of a free-ride-copy node: the shards of other peers its validators
// accepted, by round, peer and index, and its own rounds waiting for a copy. In place of
// its own contribution to a round it sends, signed by its epoch key under its own name, a
// byte-for-byte copy of the payloads of another peer's whole contribution to that round
// (the first complete one it holds, by least peer ID), in that peer's slots (index and
// count). Its own shards of a round are never sent: when it publishes them it holds the
// round back until a complete contribution of another peer to that round has arrived,
// and sends the copy then (from the validator that completed it). A round still waiting
// when the node publishes its shards of the round after the next is given up: the node
// sends nothing for it. Shared by the loop (publish) and the validators under mu.
type copier struct {
	mu      sync.Mutex
	ctx     context.Context
	publish publishFunc                             // the loop's publish, once it has published
	latest  uint64                                  // the latest round of its own shards
	pending map[uint64]*verify.ShardHeader          // rounds held back: a header of its own shards
	keys    map[uint64]ed25519.PrivateKey           // their epoch keys
	sent    map[uint64]string                       // rounds it sent a copy for: the victim
	seen    map[uint64]map[string]map[uint32][]byte // others' shards by round, peer and index
	counts  map[uint64]map[string]uint32            // their header counts
}

func newCopier() *copier {
	return &copier{pending: map[uint64]*verify.ShardHeader{}, keys: map[uint64]ed25519.PrivateKey{}, sent: map[uint64]string{},
		seen: map[uint64]map[string]map[uint32][]byte{}, counts: map[uint64]map[string]uint32{}}
}

// copyOwn takes one of the node's own signed shards: the round is held back, and the copy is
// returned when another peer's contribution to it is complete already.
func (a *adversary) copyOwn(ctx context.Context, publish publishFunc, data []byte) ([][]byte, error) {
	s, err := verify.UnmarshalShard(data, a.max)
	if err != nil {
		return nil, err
	}
	c := a.copy
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ctx, c.publish = ctx, publish
	r := s.Header.Round
	if r > c.latest {
		c.latest = r
		c.prune()
	}
	if _, done := c.sent[r]; done || c.pending[r] != nil || r+1 < c.latest {
		return nil, nil
	}
	h := s.Header
	c.pending[r] = &h
	c.keys[r] = a.signer.Key
	return a.tryCopy(r)
}

// observe takes a shard the node's validators accepted: another peer's is kept, and when
// it completes a contribution to a round held back, the copy is published.
func (a *adversary) observe(data []byte) {
	s, err := verify.UnmarshalShard(data, a.max)
	if err != nil || s.Header.Peer == a.self {
		return
	}
	c := a.copy
	c.mu.Lock()
	h := &s.Header
	r := h.Round
	if r+1 < c.latest || r > c.latest+copyAhead || h.Count == 0 || h.Count > incentives.MaxShardsPerContribution || h.Index >= h.Count {
		c.mu.Unlock()
		return
	}
	if c.seen[r] == nil {
		c.seen[r], c.counts[r] = map[string]map[uint32][]byte{}, map[string]uint32{}
	}
	byIndex := c.seen[r][h.Peer]
	switch {
	case byIndex == nil && len(c.seen[r]) >= copyVictims:
		c.mu.Unlock()
		return
	case byIndex == nil:
		byIndex = map[uint32][]byte{}
		c.seen[r][h.Peer], c.counts[r][h.Peer] = byIndex, h.Count
	case c.counts[r][h.Peer] != h.Count:
		c.mu.Unlock()
		return
	}
	if _, ok := byIndex[h.Index]; !ok {
		byIndex[h.Index] = data
	}
	var out [][]byte
	if c.pending[r] != nil {
		out, err = a.tryCopy(r)
	}
	ctx, publish := c.ctx, c.publish
	c.mu.Unlock()
	if err != nil || len(out) == 0 || publish == nil {
		return
	}
	go func() { // never from inside a validator: pubsub's own queue runs it
		for _, m := range out {
			_ = publish(ctx, p2p.KindShards, m)
		}
	}()
}

// tryCopy returns the copy of round r, held back, when another peer's contribution to it is
// complete: its payloads, each in its slot, under the node's header and epoch key. c.mu is held.
func (a *adversary) tryCopy(r uint64) ([][]byte, error) {
	c := a.copy
	var victim string
	for _, p := range slices.Sorted(maps.Keys(c.seen[r])) {
		if uint32(len(c.seen[r][p])) == c.counts[r][p] {
			victim = p
			break
		}
	}
	if victim == "" {
		return nil, nil
	}
	own, key := c.pending[r], c.keys[r]
	delete(c.pending, r)
	delete(c.keys, r)
	c.sent[r] = victim
	var out [][]byte
	for _, i := range slices.Sorted(maps.Keys(c.seen[r][victim])) {
		v, err := verify.UnmarshalShard(c.seen[r][victim][i], a.max)
		if err != nil {
			return nil, err
		}
		h := *own
		h.Index, h.Count = v.Header.Index, v.Header.Count
		s, err := verify.SignShard(key, h, v.Payload)
		if err != nil {
			return nil, err
		}
		b, err := s.Marshal()
		if err != nil {
			return nil, err
		}
		a.craft(b)
		out = append(out, b)
	}
	return out, nil
}

// prune forgets the rounds before the one before the latest: a round held back that long
// is given up. c.mu is held.
func (c *copier) prune() {
	old := func(r uint64) bool { return r+1 < c.latest }
	maps.DeleteFunc(c.pending, func(r uint64, _ *verify.ShardHeader) bool { return old(r) })
	maps.DeleteFunc(c.keys, func(r uint64, _ ed25519.PrivateKey) bool { return old(r) })
	maps.DeleteFunc(c.sent, func(r uint64, _ string) bool { return old(r) })
	maps.DeleteFunc(c.seen, func(r uint64, _ map[string]map[uint32][]byte) bool { return old(r) })
	maps.DeleteFunc(c.counts, func(r uint64, _ map[string]uint32) bool { return old(r) })
}
