package verify

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

func TestCacheLRU(t *testing.T) {
	c := NewCache(2)
	p := &Policy{MaxAgeEpochs: 10}
	var h1, h2, h3 [32]byte
	h1[0], h2[0], h3[0] = 1, 2, 3
	c.Put(h1, p, &Verdict{Epoch: 1})
	c.Put(h2, p, &Verdict{Epoch: 2})
	if v, _ := c.Lookup(h1, p, 3); v == nil { // h1 is now the most recently used
		t.Fatal("h1 missing")
	}
	c.Put(h3, p, &Verdict{Epoch: 3})
	if v, _ := c.Lookup(h2, p, 3); v != nil {
		t.Fatal("h2 should have been evicted")
	}
	if v, _ := c.Lookup(h1, p, 3); v == nil || v.Epoch != 1 {
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

// TestCachedVerdictOnlyForItsPolicy: a verdict reached under one policy is not returned for
// another: the bundle is verified again, and the stricter policy refuses it.
func TestCachedVerdictOnlyForItsPolicy(t *testing.T) {
	root := testKey(1)
	b := simBundle(t, root, 5)
	c := NewCache(8)
	loose := simPolicy(root)
	if _, _, err := c.VerifyCached(b, loose, seedFor(b), 5, testNow); err != nil {
		t.Fatal(err)
	}
	strict := simPolicy(root)
	strict.SimMeasurements = [][]byte{bytes.Repeat([]byte{1}, MeasurementSize)}
	_, hit, err := c.VerifyCached(b, strict, seedFor(b), 5, testNow)
	if hit || ClassOf(err) != ClassMeasurementNotAllowed {
		t.Fatalf("verdict of another policy: hit=%v err=%v, want measurement_not_allowed", hit, err)
	}
	if _, _, err := c.VerifyCached(b, loose, seedFor(b), 5, time.Time{}); !errors.Is(err, ErrZeroTime) {
		t.Fatalf("cache hit at the zero time: %v, want ErrZeroTime", err)
	}
}
