package p2p_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/p2p/p2ptest"
)

// TestRejectedDeliveriesGraylistTheSender: hosts whose validators reject what a peer
// sends score that peer down, below the graylist threshold after a few rejected
// messages, while a peer that sent nothing invalid keeps a score of 0 or more.
func TestRejectedDeliveriesGraylistTheSender(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rejectJunk := func(_ context.Context, _ peer.ID, data []byte) p2p.Result {
		if bytes.HasPrefix(data, []byte("junk")) {
			return p2p.Reject
		}
		return p2p.Accept
	}
	s, err := p2ptest.Start(ctx, 2, func(i int, c *p2p.Config) {
		if i != 0 { // every host but a (hosts[0]) rejects junk, as honest nodes all would
			c.Validators = p2ptest.AcceptAll()
			c.Validators[p2p.KindRecords] = rejectJunk
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a, b, c := s.Hosts[0], s.Hosts[1], s.Boot
	for _, h := range s.All() {
		sub, err := h.Subscribe(p2p.KindRecords)
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Cancel()
	}
	if err := p2ptest.Poll(ctx, "b among a's topic peers", 10*time.Millisecond, func() bool {
		for _, p := range a.TopicPeers(p2p.KindRecords) {
			if p == b.ID() {
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if err := a.Publish(ctx, p2p.KindRecords, fmt.Appendf(nil, "junk %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p2ptest.Poll(ctx, "a graylisted at b", 20*time.Millisecond, func() bool {
		sc, ok := b.GossipScore(a.ID())
		return ok && sc < -4000
	}); err != nil {
		sc, _ := b.GossipScore(a.ID())
		t.Fatalf("%v: b scores a %v", err, sc)
	}
	if sc, ok := b.GossipScore(c.ID()); ok && sc < 0 {
		t.Fatalf("b scores c, which sent nothing invalid, %v", sc)
	}
}
