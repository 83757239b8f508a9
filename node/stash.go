package node

import (
	"container/list"
	"slices"
	"sync"
)

// Stash keeps gossip messages that cannot be decided yet, such as a shard whose
// attestation bundle the node has not seen, until what they wait on arrives. Gossipsub
// never delivers a message twice (its seen cache keeps the content hash of an ignored
// message too), so a validator that answers Ignore for an undecidable message must keep
// the bytes here, and the node checks them again once the key (the bundle's hash) is
// known: Take returns them.
//
// A Stash is bounded in entries, in bytes and per key, so that messages naming one
// unknown key cannot fill it; over a bound it evicts oldest first (over the per-key
// bound, the key's oldest). Entries carry a round and expire by round. Nothing in it is
// trusted: it holds bytes no check has passed.
//
// The round loop that fills and drains it comes with the node's round loop; until then
// only tests use it. A Stash is safe for concurrent use: validators run on gossipsub's
// goroutines while the loop takes and expires.
type Stash struct {
	cfg StashConfig

	mu    sync.Mutex
	order *list.List                 // of *stashEntry, oldest first
	byKey map[string][]*list.Element // each key's entries, oldest first
	bytes int
}

// StashConfig bounds a Stash. Zero fields take the defaults.
type StashConfig struct {
	MaxEntries int // entries in all; 0 = 1024
	MaxBytes   int // bytes of data in all; 0 = 64 MiB
	PerKey     int // entries waiting on one key; 0 = 64
}

type stashEntry struct {
	key   string
	round uint64
	data  []byte
}

// NewStash returns an empty stash with cfg's bounds.
func NewStash(cfg StashConfig) *Stash {
	if cfg.MaxEntries <= 0 {
		cfg.MaxEntries = 1024
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = 64 << 20
	}
	if cfg.PerKey <= 0 {
		cfg.PerKey = 64
	}
	cfg.PerKey = min(cfg.PerKey, cfg.MaxEntries)
	return &Stash{cfg: cfg, order: list.New(), byKey: make(map[string][]*list.Element)}
}

// Put keeps a copy of data, waiting on key, for round. It evicts older entries to stay
// within the bounds, and reports false (keeping nothing) when data alone is over the
// byte bound.
func (s *Stash) Put(key string, round uint64, data []byte) bool {
	if len(data) > s.cfg.MaxBytes {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if ks := s.byKey[key]; len(ks) >= s.cfg.PerKey {
		s.remove(ks[0])
	}
	for s.order.Len() >= s.cfg.MaxEntries || s.bytes+len(data) > s.cfg.MaxBytes {
		s.remove(s.order.Front())
	}
	e := s.order.PushBack(&stashEntry{key: key, round: round, data: slices.Clone(data)})
	s.byKey[key] = append(s.byKey[key], e)
	s.bytes += len(data)
	return true
}

// Take removes and returns the data waiting on key, oldest first. The slices are the
// caller's.
func (s *Stash) Take(key string) [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	ks := s.byKey[key]
	out := make([][]byte, 0, len(ks))
	for _, e := range slices.Clone(ks) {
		out = append(out, e.Value.(*stashEntry).data)
		s.remove(e)
	}
	return out
}

// Expire drops the entries of rounds before round and returns how many it dropped.
func (s *Stash) Expire(round uint64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for e := s.order.Front(); e != nil; {
		next := e.Next()
		if e.Value.(*stashEntry).round < round {
			s.remove(e)
			n++
		}
		e = next
	}
	return n
}

// Len returns the number of entries and the bytes of data held.
func (s *Stash) Len() (entries, bytes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.order.Len(), s.bytes
}

// remove drops one entry from the order and from its key's list. s.mu is held.
func (s *Stash) remove(e *list.Element) {
	se := s.order.Remove(e).(*stashEntry)
	s.bytes -= len(se.data)
	ks := slices.DeleteFunc(s.byKey[se.key], func(x *list.Element) bool { return x == e })
	if len(ks) == 0 {
		delete(s.byKey, se.key)
	} else {
		s.byKey[se.key] = ks
	}
}
