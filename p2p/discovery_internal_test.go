package p2p

import (
	"testing"
	"time"
)

// TestLookupsBackOffWhenTheyFindNoOneNew: a host whose lookups find only peers it is
// connected to, once its own advertisement has landed, looks up ever more rarely, from
// findIdleFirst up to findIdleMax (a swarm smaller than its target would otherwise be
// looked up every findMax, at tens of KB a lookup); before it has landed, at most every
// findMax; a lookup that finds someone new, or connects someone, brings it back to
// findFirst.
func TestLookupsBackOffWhenTheyFindNoOneNew(t *testing.T) {
	wait, lastFound := findFirst, 0
	for range 20 {
		wait = nextFind(wait, 15, lastFound, 0, 0, false)
		lastFound = 15
	}
	if wait != findMax {
		t.Fatalf("before its advertisement landed, after lookups finding no one new the wait is %v, want %v", wait, findMax)
	}
	if w := nextFind(findFirst, 15, 15, 0, 0, true); w != findIdleFirst || findIdleFirst <= 2*findFirst {
		t.Fatalf("the first settled lookup finding no one new: wait %v, want %v", w, findIdleFirst)
	}
	for range 20 {
		wait = nextFind(wait, 15, lastFound, 0, 0, true)
	}
	if wait != findIdleMax || findIdleMax <= findMax {
		t.Fatalf("after settled lookups finding no one new the wait is %v, want %v (above findMax %v)", wait, findIdleMax, findMax)
	}
	for _, settled := range []bool{false, true} {
		if w := nextFind(wait, 16, 15, 1, 0, settled); w != findFirst {
			t.Fatalf("a lookup finding a new peer: wait %v, want %v", w, findFirst)
		}
		if w := nextFind(wait, 15, 15, 1, 1, settled); w != findFirst {
			t.Fatalf("a lookup connecting a peer: wait %v, want %v", w, findFirst)
		}
		if w := nextFind(findMax, 0, 0, 0, 0, settled); w != findMax {
			t.Fatalf("a lookup that failed or found no one: wait %v, want at most %v", w, findMax)
		}
		if w := nextFind(findMax, 15, 15, 3, 0, settled); w != findMax {
			t.Fatalf("a lookup finding peers it could not connect: wait %v, want at most %v", w, findMax)
		}
	}
}

// TestReadvertiseOnlyWhenTheTableGrew: a host advertises again once its routing table has
// grown by half since the last advertisement (which reached few of the rendezvous key's
// nearest peers), or when readvertiseEvery has passed; not while the table stays as it was.
func TestReadvertiseOnlyWhenTheTableGrew(t *testing.T) {
	for _, c := range []struct {
		was, now int
		since    time.Duration
		want     bool
	}{
		{1, 1, advertiseFirst, false},
		{1, 2, advertiseFirst, true},
		{16, 16, advertiseMax / 2, false},
		{16, 23, advertiseMax / 2, false},
		{16, 24, advertiseFirst, true},
		{16, 10, advertiseMax / 2, false},
		{16, 16, advertiseMax, false},
		{16, 16, readvertiseEvery - time.Second, false},
		{16, 16, readvertiseEvery, true},
		{0, 0, advertiseFirst, false},
	} {
		if got := readvertise(c.was, c.now, c.since); got != c.want {
			t.Errorf("advertised with %d peers, %v ago, %d now: again %v, want %v", c.was, c.since, c.now, got, c.want)
		}
	}
}
