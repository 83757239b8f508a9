package node

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/p2p/p2ptest"
)

// TestBootstrapDropsJunk starts a bootstrap node between two hosts that are not
// connected to each other: junk published by one on the records topic must not reach
// the other through the bootstrap node, and the bootstrap node counts it by reason.
func TestBootstrapDropsJunk(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	home, c, s := newHome(t)
	boot, err := New(ctx, Options{Home: home, Config: c, Spec: s, Role: configs.RoleBootstrap, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer boot.Close()
	// Two DHT clients that stop looking for peers once they hold one: they reach each
	// other only through the bootstrap node.
	var hosts [2]*p2p.Host
	for i := range hosts {
		cfg := p2ptest.Config(p2ptest.Key())
		cfg.Network, cfg.Run = s.NetworkID(), s.Run
		cfg.Bootstrap = []peer.AddrInfo{boot.host.AddrInfo()}
		cfg.DHTMode, cfg.ConnLow, cfg.ConnHigh = p2p.DHTClient, 1, 8
		if hosts[i], err = p2p.New(ctx, cfg); err != nil {
			t.Fatal(err)
		}
		defer hosts[i].Close()
	}
	sender, receiver := hosts[0], hosts[1]
	sub, err := receiver.Subscribe(p2p.KindRecords)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Cancel()
	if err := p2ptest.Poll(ctx, "the bootstrap node relaying to the receiver", 10*time.Millisecond, func() bool {
		return slices.Contains(boot.host.TopicPeers(p2p.KindRecords), receiver.ID()) &&
			slices.Contains(sender.TopicPeers(p2p.KindRecords), boot.ID())
	}); err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 16)
	go func() {
		for {
			m, err := sub.Next(ctx)
			if err != nil {
				return
			}
			got <- m.Data
		}
	}()
	// First a well-formed signed record, until one arrives: the path through the
	// bootstrap node works once the mesh has formed.
	key := p2ptest.Key()
	for round := uint64(1); ; round++ {
		rec := incentives.Record{Version: incentives.RecordVersion, Round: round, PrevRoot: make([]byte, 32), NewRoot: make([]byte, 32)}
		sr, err := incentives.SignRecord(key, s.NetworkID(), s.Run, &rec)
		if err != nil {
			t.Fatal(err)
		}
		if err := sender.Publish(ctx, p2p.KindRecords, sr.Marshal()); err != nil {
			t.Fatal(err)
		}
		if receiveWithin(t, ctx, got, 100*time.Millisecond) != nil {
			break
		}
	}
	junk := "junk, not a record"
	if err := sender.Publish(ctx, p2p.KindRecords, []byte(junk)); err != nil {
		t.Fatal(err)
	}
	counted := `lowband_node_gossip_messages_total{kind="records",reason="decode",result="reject"} 1`
	for !strings.Contains(string(get(t, "http://"+boot.APIAddr()+"/metrics")), counted) {
		if d := receiveWithin(t, ctx, got, 20*time.Millisecond); string(d) == junk {
			t.Fatalf("the bootstrap node forwarded junk: the receiver got %q", d)
		}
	}
	if d := receiveWithin(t, ctx, got, 100*time.Millisecond); string(d) == junk {
		t.Fatalf("the bootstrap node forwarded junk: the receiver got %q", d)
	}
	if slices.Contains(sender.ConnectedPeers(), receiver.ID()) {
		t.Fatal("sender and receiver connected directly; the test proves nothing")
	}
}

// receiveWithin returns the next data from got, or nil after wait; it fails the test
// when ctx ends.
func receiveWithin(t *testing.T, ctx context.Context, got <-chan []byte, wait time.Duration) []byte {
	t.Helper()
	select {
	case d := <-got:
		return d
	case <-time.After(wait):
		return nil
	case <-ctx.Done():
		t.Fatal("test timed out")
		return nil
	}
}
