package p2p_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/p2p/p2ptest"
)

func TestMetrics(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reg := prometheus.NewRegistry()
	s, err := p2ptest.Start(ctx, 1, func(i int, c *p2p.Config) {
		if i == 0 {
			c.Registerer = reg
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a, b := s.Boot, s.Hosts[0]
	sub, err := b.Subscribe(p2p.KindAttest)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Cancel()
	if err := p2ptest.Poll(ctx, "topic peer", 10*time.Millisecond, func() bool {
		return len(a.TopicPeers(p2p.KindAttest)) == 1
	}); err != nil {
		t.Fatal(err)
	}
	if err := a.Publish(ctx, p2p.KindAttest, []byte("bundle")); err != nil {
		t.Fatal(err)
	}
	if _, err := sub.Next(ctx); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var received float64
	libp2p := false
	for _, f := range families {
		if f.GetName() == "lowband_p2p_messages_received_total" {
			for _, m := range f.GetMetric() {
				if m.GetLabel()[0].GetValue() == p2p.KindAttest {
					received = m.GetCounter().GetValue()
				}
			}
		}
		libp2p = libp2p || strings.HasPrefix(f.GetName(), "libp2p_")
	}
	if received != 1 {
		t.Errorf("received counter for %s = %v, want 1", p2p.KindAttest, received)
	}
	if !libp2p {
		t.Error("no go-libp2p metric registered")
	}
}

// TestQUIC joins two hosts that listen on QUIC only and gossips between them.
func TestQUIC(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := p2ptest.Start(ctx, 1, func(_ int, c *p2p.Config) { c.Listen = p2ptest.ListenQUIC })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a, b := s.Boot, s.Hosts[0]
	sub, err := b.Subscribe(p2p.KindRecords)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Cancel()
	if err := p2ptest.Poll(ctx, "topic peer", 10*time.Millisecond, func() bool {
		return len(a.TopicPeers(p2p.KindRecords)) == 1
	}); err != nil {
		t.Fatal(err)
	}
	if addrs := a.Peers()[0].Addrs; len(addrs) == 0 || !strings.Contains(addrs[0], "/quic-v1") {
		t.Fatalf("connection addresses %v, want QUIC", addrs)
	}
	if err := a.Publish(ctx, p2p.KindRecords, []byte("over quic")); err != nil {
		t.Fatal(err)
	}
	if m, err := sub.Next(ctx); err != nil || string(m.Data) != "over quic" {
		t.Fatalf("got %v, %v", m, err)
	}
}

// TestAppScoreGraylists gives one peer a very negative application score at one
// host: that host then ignores everything the peer sends it directly, and still
// gets the peer's message through a third host.
func TestAppScoreGraylists(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := p2ptest.Start(ctx, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a, b, c := s.Hosts[0], s.Hosts[1], s.Boot
	if err := p2ptest.Poll(ctx, "full mesh", 10*time.Millisecond, func() bool {
		return p2ptest.FoundAll(s.All()) && len(a.Peers()) == 2 && len(b.Peers()) == 2
	}); err != nil {
		t.Fatal(err)
	}
	b.SetAppScore(func(p peer.ID) float64 {
		if p == a.ID() {
			return -1e6
		}
		return 0
	})
	var subs []*p2p.Subscription
	for _, h := range s.All() {
		sub, err := h.Subscribe(p2p.KindRecords)
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Cancel()
		subs = append(subs, sub)
	}
	if err := p2ptest.Poll(ctx, "topic peers", 10*time.Millisecond, func() bool {
		return len(a.TopicPeers(p2p.KindRecords)) == 2 && len(c.TopicPeers(p2p.KindRecords)) == 2
	}); err != nil {
		t.Fatal(err)
	}
	if err := a.Publish(ctx, p2p.KindRecords, []byte("from a")); err != nil {
		t.Fatal(err)
	}
	m, err := subs[2].Next(ctx) // b's subscription
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Data) != "from a" || m.ReceivedFrom != c.ID() {
		t.Fatalf("b got %q relayed by %s, want a's message relayed by c (%s)", m.Data, m.ReceivedFrom, c.ID())
	}
}
