package verify

import (
	"container/list"
	"sync"
	"time"
)

// Cache remembers verdicts by bundle hash, so a bundle is verified once however many shards
// name it. It is bounded: beyond its capacity the least recently used entry is dropped. It
// has no clock: the caller evicts stale epochs with Forget or by letting entries age out,
// and must re-check the epoch window (Verdict.Epoch) against the current epoch when it
// looks a verdict up. Safe for concurrent use.
type Cache struct {
	mu    sync.Mutex
	cap   int
	order *list.List // front: most recently used; values are *cacheEntry
	byKey map[[32]byte]*list.Element
}

type cacheEntry struct {
	key     [32]byte
	verdict *Verdict
}

// NewCache returns a cache holding at most capacity verdicts (at least 1).
func NewCache(capacity int) *Cache {
	if capacity < 1 {
		capacity = 1
	}
	return &Cache{cap: capacity, order: list.New(), byKey: make(map[[32]byte]*list.Element, capacity)}
}

// Get returns the verdict stored for a bundle hash. The verdict is shared: do not modify it.
func (c *Cache) Get(hash [32]byte) (*Verdict, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[hash]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*cacheEntry).verdict, true
}

// Put stores a verdict under its bundle hash.
func (c *Cache) Put(hash [32]byte, v *Verdict) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[hash]; ok {
		el.Value.(*cacheEntry).verdict = v
		c.order.MoveToFront(el)
		return
	}
	c.byKey[hash] = c.order.PushFront(&cacheEntry{key: hash, verdict: v})
	for c.order.Len() > c.cap {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.byKey, last.Value.(*cacheEntry).key)
	}
}

// Forget drops a hash from the cache.
func (c *Cache) Forget(hash [32]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[hash]; ok {
		c.order.Remove(el)
		delete(c.byKey, hash)
	}
}

// Len returns the number of cached verdicts.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

// VerifyCached returns the cached verdict for b when there is one whose epoch is still
// within p's window of currentEpoch; otherwise it verifies b and caches a success. Failures
// are not cached. The bool reports a cache hit. A cache belongs to one policy: verdicts do
// not record which policy accepted them, so make a new cache when the policy changes. A
// hit re-checks only the epoch window: it assumes epochSeed is a function of the bundle
// (EpochSeed of its network, run and epoch), and certificate validity is as of the first
// verification.
func (c *Cache) VerifyCached(b *Bundle, p *Policy, epochSeed []byte, currentEpoch uint64, now time.Time) (*Verdict, bool, error) {
	h := b.Hash()
	if v, ok := c.Get(h); ok {
		if err := checkEpoch(v.Epoch, currentEpoch, p.MaxAgeEpochs); err != nil {
			c.Forget(h)
			return nil, false, err
		}
		return v, true, nil
	}
	v, err := Verify(b, p, epochSeed, currentEpoch, now)
	if err != nil {
		return nil, false, err
	}
	c.Put(h, v)
	return v, false, nil
}
