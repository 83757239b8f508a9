package verify

import (
	"testing"
)

func TestCacheLRU(t *testing.T) {
	c := NewCache(2)
	var h1, h2, h3 [32]byte
	h1[0], h2[0], h3[0] = 1, 2, 3
	c.Put(h1, &Verdict{Epoch: 1})
	c.Put(h2, &Verdict{Epoch: 2})
	if _, ok := c.Get(h1); !ok { // h1 is now the most recently used
		t.Fatal("h1 missing")
	}
	c.Put(h3, &Verdict{Epoch: 3})
	if _, ok := c.Get(h2); ok {
		t.Fatal("h2 should have been evicted")
	}
	if v, ok := c.Get(h1); !ok || v.Epoch != 1 {
		t.Fatal("h1 evicted instead of h2")
	}
	c.Forget(h1)
	if c.Len() != 1 {
		t.Fatalf("len %d", c.Len())
	}
}

func TestVerifyCached(t *testing.T) {
	root := testKey(1)
	b := simBundle(t, root, 5)
	p := simPolicy(root)
	c := NewCache(8)
	v, hit, err := c.VerifyCached(b, p, seedFor(b), 5, testNow)
	if err != nil || hit {
		t.Fatalf("first: %v hit=%v", err, hit)
	}
	v2, hit, err := c.VerifyCached(b, p, seedFor(b), 6, testNow)
	if err != nil || !hit || v2 != v {
		t.Fatalf("second: %v hit=%v", err, hit)
	}
	// A cached verdict still goes stale.
	_, _, err = c.VerifyCached(b, p, seedFor(b), 5+p.MaxAgeEpochs+1, testNow)
	wantClass(t, err, ClassStale)
	if c.Len() != 0 {
		t.Fatal("stale verdict kept")
	}
	// Failures are not cached.
	bad := simBundle(t, testKey(2), 5)
	if _, _, err := c.VerifyCached(bad, p, seedFor(bad), 5, testNow); ClassOf(err) != ClassUntrustedRoot {
		t.Fatalf("untrusted: %v", err)
	}
	if c.Len() != 0 {
		t.Fatal("failure cached")
	}
}
