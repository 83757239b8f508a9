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
// unknown key cannot fill it. Every entry is charged to its source, the neighbour that
// forwarded it (never an author: messages have none, and nothing about the content is
// decided by it). Over the entry or byte bound the stash evicts the oldest entry of the
// source holding the most entries, so one neighbour flooding shards that name bundles
// nobody has (which cost nothing to make) only displaces its own entries, and every
// neighbour keeps a fair share; over the per-key bound it evicts, among that key's
// entries, the oldest of the source holding the most of them, so that shards naming an
// honest bundle's hash (which anyone can copy) do not push out the honest ones waiting on
// it. Entries carry a round and expire by round. Nothing in it is trusted: it holds bytes
// no check has passed.
//
// The full gossip checks (fullChecks) fill it and drain it when a bundle arrives. A Stash
// is safe for concurrent use: validators run on gossipsub's goroutines while the loop
// takes and expires.
type Stash struct {
	cfg StashConfig

	mu       sync.Mutex
	order    *list.List                 // of *stashEntry, oldest first
	byKey    map[string][]*list.Element // each key's entries, oldest first
	bySource map[string][]*list.Element // each source's entries, oldest first
	bytes    int
}

// StashConfig bounds a Stash. Zero fields take the defaults.
type StashConfig struct {
	MaxEntries int // entries in all; 0 = 1024
	MaxBytes   int // bytes of data in all; 0 = 64 MiB
	PerKey     int // entries waiting on one key; 0 = 64
}

type stashEntry struct {
	key, source string
	round       uint64
	data        []byte
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
	return &Stash{cfg: cfg, order: list.New(), byKey: make(map[string][]*list.Element), bySource: make(map[string][]*list.Element)}
}

// Put keeps a copy of data, waiting on key, for round, charged to source (the forwarding
// neighbour). It evicts entries to stay within the bounds (see Stash), and reports false
// (keeping nothing) when data alone is over the byte bound.
func (s *Stash) Put(source, key string, round uint64, data []byte) bool {
	if len(data) > s.cfg.MaxBytes {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if ks := s.byKey[key]; len(ks) >= s.cfg.PerKey {
		s.remove(keyHeaviest(ks, source))
	}
	for s.order.Len() >= s.cfg.MaxEntries || s.bytes+len(data) > s.cfg.MaxBytes {
		s.remove(s.heaviest(source, len(data), s.order.Len() < s.cfg.MaxEntries))
	}
	e := s.order.PushBack(&stashEntry{key: key, source: source, round: round, data: slices.Clone(data)})
	s.byKey[key] = append(s.byKey[key], e)
	s.bySource[source] = append(s.bySource[source], e)
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

// heaviest returns the oldest entry of the source with the largest load, counting the
// entry of n bytes that incoming (its source) is about to add: the load is bytes when
// byBytes (the byte bound is what is over), else entries. Ties go to the source whose
// oldest entry is oldest. s.mu is held and the stash is not empty.
func (s *Stash) heaviest(incoming string, n int, byBytes bool) *list.Element {
	var best *list.Element
	bestLoad := -1
	for e := s.order.Front(); e != nil; e = e.Next() {
		src := e.Value.(*stashEntry).source
		es := s.bySource[src]
		if es[0] != e { // visit each source once, at its oldest entry
			continue
		}
		load := len(es)
		if byBytes {
			load = 0
			for _, x := range es {
				load += len(x.Value.(*stashEntry).data)
			}
		}
		if src == incoming && byBytes {
			load += n
		} else if src == incoming {
			load++
		}
		if load > bestLoad {
			best, bestLoad = e, load
		}
	}
	return best
}

// keyHeaviest returns the oldest entry, among one key's entries ks (oldest first), of the
// source holding the most of them, counting the entry incoming is about to add.
func keyHeaviest(ks []*list.Element, incoming string) *list.Element {
	count := map[string]int{incoming: 1}
	for _, e := range ks {
		count[e.Value.(*stashEntry).source]++
	}
	best := ks[0]
	for _, e := range ks[1:] {
		if count[e.Value.(*stashEntry).source] > count[best.Value.(*stashEntry).source] {
			best = e
		}
	}
	return best
}

// remove drops one entry from the order and from its key's and source's lists. s.mu is
// held.
func (s *Stash) remove(e *list.Element) {
	se := s.order.Remove(e).(*stashEntry)
	s.bytes -= len(se.data)
	dropElement(s.byKey, se.key, e)
	dropElement(s.bySource, se.source, e)
}

func dropElement(m map[string][]*list.Element, k string, e *list.Element) {
	es := slices.DeleteFunc(m[k], func(x *list.Element) bool { return x == e })
	if len(es) == 0 {
		delete(m, k)
	} else {
		m[k] = es
	}
}
