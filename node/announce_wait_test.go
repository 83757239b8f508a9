package node

import (
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"
)

// TestWaitingAnnouncementsBoundedPerForwarder: at most maxWaitsPerForwarder announcements of
// one forwarder are checked at once; another forwarder is not held back by it, and an
// ended check frees its place.
func TestWaitingAnnouncementsBoundedPerForwarder(t *testing.T) {
	f := &fullChecks{waiting: map[peer.ID]int{}}
	a, b := peer.ID("a"), peer.ID("b")
	for i := range maxWaitsPerForwarder {
		if !f.startWait(a) {
			t.Fatalf("check %d of one forwarder refused", i+1)
		}
	}
	if f.startWait(a) {
		t.Fatalf("check %d of one forwarder taken", maxWaitsPerForwarder+1)
	}
	if !f.startWait(b) {
		t.Fatal("another forwarder held back")
	}
	f.endWait(a)
	if !f.startWait(a) {
		t.Fatal("an ended check did not free its place")
	}
	for range maxWaitsPerForwarder {
		f.endWait(a)
	}
	f.endWait(b)
	if len(f.waiting) != 0 {
		t.Fatalf("counts left: %v", f.waiting)
	}
}
