package verify

import (
	"container/list"
	"sync"
	"time"
)

// Cache remembers verdicts by bundle hash, so a bundle is verified once however many shards
// name it. It is bounded: beyond its capacity the least recently used entry is dropped. It
// has no clock. Every read goes through Lookup, which returns a verdict only for the policy
// that reached it and only while its epoch is within that policy's window of the current
// epoch. Safe for concurrent use.
type Cache struct {
	mu    sync.Mutex
	cap   int
	order *list.List // front: most recently used; values are *cacheEntry
	byKey map[[32]byte]*list.Element
}

type cacheEntry struct {
	key     [32]byte
	policy  *Policy
	verdict *Verdict
}

// NewCache returns a cache holding at most capacity verdicts (at least 1).
func NewCache(capacity int) *Cache {
	if capacity < 1 {
		capacity = 1
	}
	return &Cache{cap: capacity, order: list.New(), byKey: make(map[[32]byte]*list.Element, capacity)}
}

// Lookup returns the verdict stored for a bundle hash when policy p (the same *Policy)
// reached it. A verdict whose epoch has left p's window at currentEpoch is forgotten and
// reported as a stale error. A miss is (nil, nil). The verdict is shared: do not modify it.
func (c *Cache) Lookup(hash [32]byte, p *Policy, currentEpoch uint64) (*Verdict, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[hash]
	if !ok {
		return nil, nil
	}
	e := el.Value.(*cacheEntry)
	if e.policy != p {
		return nil, nil
	}
	if err := checkEpoch(e.verdict.Epoch, currentEpoch, p.MaxAgeEpochs); err != nil {
		c.order.Remove(el)
		delete(c.byKey, hash)
		return nil, err
	}
	c.order.MoveToFront(el)
	return e.verdict, nil
}

// Put stores a verdict that policy p reached under its bundle hash.
func (c *Cache) Put(hash [32]byte, p *Policy, v *Verdict) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[hash]; ok {
		e := el.Value.(*cacheEntry)
		e.policy, e.verdict = p, v
		c.order.MoveToFront(el)
		return
	}
	c.byKey[hash] = c.order.PushFront(&cacheEntry{key: hash, policy: p, verdict: v})
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

// VerifyCached returns the cached verdict for b (see Lookup); otherwise it verifies b and
// caches a success. Failures are not cached. The bool reports a cache hit. A hit assumes
// epochSeed is a function of the bundle (EpochSeed of its network, run and epoch), and
// certificate validity is as of the first verification. now must not be zero, hit or miss.
func (c *Cache) VerifyCached(b *Bundle, p *Policy, epochSeed []byte, currentEpoch uint64, now time.Time) (*Verdict, bool, error) {
	if err := checkNow(now); err != nil {
		return nil, false, err
	}
	h := b.Hash()
	v, err := c.Lookup(h, p, currentEpoch)
	if err != nil {
		return nil, false, err
	}
	if v != nil {
		return v, true, nil
	}
	v, err = Verify(b, p, epochSeed, currentEpoch, now)
	if err != nil {
		return nil, false, err
	}
	c.Put(h, p, v)
	return v, false, nil
}
