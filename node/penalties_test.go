package node

import (
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/p2p/p2ptest"
)

// Offences add up, expire after offenceMemory, and past maxPenalised peers the one whose
// last offence is oldest is forgotten first.
func TestPenaltiesAddUpExpireAndStayBounded(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ps := newPenalties(func() time.Time { return now })
	a, b := peer.ID("a"), peer.ID("b")
	ps.offence(a)
	now = now.Add(time.Minute)
	ps.offence(a)
	if got := ps.score(a); got != -2*offencePenalty || ps.score(b) != 0 {
		t.Fatalf("scores %v and %v after two offences of a", got, ps.score(b))
	}
	now = now.Add(offenceMemory - time.Minute)
	if got := ps.score(a); got != -offencePenalty {
		t.Fatalf("score %v once the first offence is an hour old", got)
	}
	now = now.Add(time.Minute)
	if got := ps.score(a); got != 0 {
		t.Fatalf("score %v once both are", got)
	}
	ps.offence(a) // the oldest offence of all
	for range maxPenalised {
		now = now.Add(time.Second)
		id, err := peer.IDFromPrivateKey(p2ptest.Key())
		if err != nil {
			t.Fatal(err)
		}
		ps.offence(id)
	}
	if len(ps.by) != maxPenalised || ps.score(a) != 0 {
		t.Fatalf("%d peers remembered, a scores %v", len(ps.by), ps.score(a))
	}
}
