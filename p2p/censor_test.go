package p2p_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/p2p/p2ptest"
)

// TestRepublishedPayloadNotCensored: an attacker publishes an honest author's exact
// payload first. The receiver must still deliver the author's payload: the message ID
// is the content hash, so the attacker's copy and the author's are one message, and a
// verdict that depended on who published it (the old "sender is not the signer" check
// on a gossipsub author) would censor the author. Validators decide on bytes only.
func TestRepublishedPayloadNotCensored(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := p2ptest.Start(ctx, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	attacker, author, receiver := s.Hosts[0], s.Hosts[1], s.Hosts[2]
	payload := []byte("signed by " + author.ID().String() + ": shard bytes")

	var checked atomic.Int64
	check := func(_ context.Context, _ peer.ID, data []byte) p2p.Result {
		checked.Add(1)
		if !strings.HasPrefix(string(data), "signed by "+author.ID().String()+":") {
			return p2p.Reject // the payload's own signature does not verify
		}
		return p2p.Accept
	}
	for _, h := range []*p2p.Host{author, receiver} {
		if err := h.SetValidator(p2p.KindShards, check); err != nil {
			t.Fatal(err)
		}
	}
	var sub *p2p.Subscription
	for _, h := range []*p2p.Host{attacker, author, receiver} {
		if sub, err = h.Subscribe(p2p.KindShards); err != nil {
			t.Fatal(err)
		}
		defer sub.Cancel()
	}
	waitTopicPeers(t, ctx, receiver, p2p.KindShards, attacker, author)
	waitTopicPeers(t, ctx, attacker, p2p.KindShards, receiver)
	waitTopicPeers(t, ctx, author, p2p.KindShards, receiver)

	if err := attacker.Publish(ctx, p2p.KindShards, payload); err != nil {
		t.Fatal(err)
	}
	if err := p2ptest.Poll(ctx, "the attacker's copy checked", 10*time.Millisecond, func() bool {
		return checked.Load() > 0
	}); err != nil {
		t.Fatal(err)
	}
	if err := author.Publish(ctx, p2p.KindShards, payload); err != nil {
		t.Fatal(err)
	}
	rctx, rcancel := context.WithTimeout(ctx, 3*time.Second)
	defer rcancel()
	m, err := sub.Next(rctx)
	if err != nil {
		t.Fatalf("the receiver never got the author's payload: %v", err)
	}
	if string(m.Data) != string(payload) {
		t.Fatalf("got %q, want the author's payload", m.Data)
	}
}

// waitTopicPeers waits until h sees every one of want on the topic of the given kind.
func waitTopicPeers(t *testing.T, ctx context.Context, h *p2p.Host, kind string, want ...*p2p.Host) {
	t.Helper()
	err := p2ptest.Poll(ctx, "topic peers", 10*time.Millisecond, func() bool {
		have := h.TopicPeers(kind)
		for _, w := range want {
			found := false
			for _, p := range have {
				found = found || p == w.ID()
			}
			if !found {
				return false
			}
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestIgnoredMessageNeverDeliveredAgain: once a validator has ignored some bytes,
// publishing the same bytes again delivers nothing, even when the validator would now
// accept them (gossipsub's seen cache holds the content ID). A node that cannot decide
// a message yet must keep it itself rather than wait for a second delivery.
func TestIgnoredMessageNeverDeliveredAgain(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := p2ptest.Start(ctx, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	author, receiver := s.Hosts[0], s.Hosts[1]
	var decidable atomic.Bool
	var ignored atomic.Int64
	err = receiver.SetValidator(p2p.KindShards, func(context.Context, peer.ID, []byte) p2p.Result {
		if !decidable.Load() {
			ignored.Add(1)
			return p2p.Ignore
		}
		return p2p.Accept
	})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := receiver.Subscribe(p2p.KindShards)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Cancel()
	waitTopicPeers(t, ctx, author, p2p.KindShards, receiver)
	if err := author.Publish(ctx, p2p.KindShards, []byte("first")); err != nil {
		t.Fatal(err)
	}
	if err := p2ptest.Poll(ctx, "the message ignored", 10*time.Millisecond, func() bool { return ignored.Load() > 0 }); err != nil {
		t.Fatal(err)
	}
	decidable.Store(true)
	for _, d := range []string{"first", "second"} {
		if err := author.Publish(ctx, p2p.KindShards, []byte(d)); err != nil {
			t.Fatal(err)
		}
	}
	m, err := sub.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Data) != "second" {
		t.Fatalf("got %q; the ignored message was delivered again", m.Data)
	}
	wctx, wcancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer wcancel()
	if m, err := sub.Next(wctx); err == nil {
		t.Fatalf("got %q after the second message; the ignored message was delivered again", m.Data)
	}
}
