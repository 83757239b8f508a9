package p2p

import (
	"fmt"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
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
		wait, _ = nextFind(wait, 15, lastFound, 0, 0, false)
		lastFound = 15
	}
	if wait != findMax {
		t.Fatalf("before its advertisement landed, after lookups finding no one new the wait is %v, want %v", wait, findMax)
	}
	if w, idle := nextFind(findFirst, 15, 15, 0, 0, true); w != findIdleFirst || !idle || findIdleFirst <= 2*findFirst {
		t.Fatalf("the first settled lookup finding no one new: wait %v (idle %v), want %v, idle", w, idle, findIdleFirst)
	}
	for range 20 {
		wait, _ = nextFind(wait, 15, lastFound, 0, 0, true)
	}
	if wait != findIdleMax || findIdleMax <= findMax {
		t.Fatalf("after settled lookups finding no one new the wait is %v, want %v (above findMax %v)", wait, findIdleMax, findMax)
	}
	for _, settled := range []bool{false, true} {
		if w, idle := nextFind(wait, 16, 15, 1, 0, settled); w != findFirst || idle {
			t.Fatalf("a lookup finding a new peer: wait %v (idle %v), want %v", w, idle, findFirst)
		}
		if w, idle := nextFind(wait, 15, 15, 1, 1, settled); w != findFirst || idle {
			t.Fatalf("a lookup connecting a peer: wait %v (idle %v), want %v", w, idle, findFirst)
		}
		if w, idle := nextFind(findMax, 0, 0, 0, 0, settled); w != findMax || idle {
			t.Fatalf("a lookup that failed or found no one: wait %v (idle %v), want at most %v", w, idle, findMax)
		}
		if w, idle := nextFind(findMax, 15, 15, 3, 0, settled); w != findMax || idle {
			t.Fatalf("a lookup finding peers it could not connect: wait %v (idle %v), want at most %v", w, idle, findMax)
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

// A found peer a dial failed to does not count as fresh for unreachableFor (a record of a
// node that left lives 48 hours, and would keep a host of a small swarm from idling), then
// it does again; the set keeps at most unreachableMax peers, dropping the oldest.
func TestUnreachablePeersExpireAndAreBounded(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	var u unreachablePeers
	if u.has("a", t0) {
		t.Fatal("an empty set holds a peer")
	}
	u.add("a", t0)
	if !u.has("a", t0.Add(unreachableFor-time.Second)) || u.has("a", t0.Add(unreachableFor)) {
		t.Fatalf("a failed dial counts for %v, no longer", unreachableFor)
	}
	for i := range unreachableMax + 10 {
		u.add(peer.ID(fmt.Sprint("p", i)), t0.Add(time.Duration(i)*time.Millisecond))
	}
	if len(u.since) > unreachableMax {
		t.Fatalf("%d peers kept, want at most %d", len(u.since), unreachableMax)
	}
	last := t0.Add(time.Duration(unreachableMax+9) * time.Millisecond)
	if !u.has(peer.ID(fmt.Sprint("p", unreachableMax+9)), last) || u.has("p0", last) {
		t.Fatal("the newest peer must be kept and the oldest dropped")
	}
	u.add("late", t0.Add(unreachableFor+time.Hour))
	if len(u.since) != 1 {
		t.Fatalf("%d peers kept after all others expired, want 1", len(u.since))
	}
}
