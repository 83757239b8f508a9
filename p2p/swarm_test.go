package p2p_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/p2p/p2ptest"
)

func startSwarm(t *testing.T, ctx context.Context, n int) *p2ptest.Swarm {
	t.Helper()
	s, err := p2ptest.Start(ctx, n, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// subscribeAll subscribes every host to kind and waits until from sees every
// other host as a topic peer.
func subscribeAll(t *testing.T, ctx context.Context, kind string, from *p2p.Host, hosts []*p2p.Host) []*p2p.Subscription {
	t.Helper()
	subs := make([]*p2p.Subscription, len(hosts))
	for i, h := range hosts {
		s, err := h.Subscribe(kind)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Cancel)
		subs[i] = s
	}
	if err := p2ptest.Poll(ctx, "topic peers", 20*time.Millisecond, func() bool {
		return len(from.TopicPeers(kind)) >= len(hosts)-1
	}); err != nil {
		t.Fatal(err)
	}
	return subs
}

// expectAll checks that every subscription receives data (skipping other messages).
func expectAll(t *testing.T, ctx context.Context, subs []*p2p.Subscription, data []byte) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, len(subs))
	for i, s := range subs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				m, err := s.Next(ctx)
				if err != nil {
					errs[i] = fmt.Errorf("subscriber %d: %w", i, err)
					return
				}
				if bytes.Equal(m.Data, data) {
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

func TestSwarmFindsEveryoneAndGossips(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := startSwarm(t, ctx, 11) // 12 hosts with the bootstrap
	all := s.All()
	// The hosts were given only the bootstrap's address: every other peer they
	// know came through the DHT (routing table refresh and rendezvous lookups).
	// Twelve hosts fit in every routing table, so each table must end up holding
	// all the others.
	if err := p2ptest.Poll(ctx, "every routing table to hold every other host", 50*time.Millisecond, func() bool {
		return p2ptest.InTables(all)
	}); err != nil {
		for i, h := range all {
			t.Logf("host %d: table %d, misses %d peers", i, h.RoutingTableSize(), p2ptest.Missing(h, all))
		}
		t.Fatal(err)
	}
	// Every host advertised itself under the rendezvous string.
	if err := p2ptest.Poll(ctx, "every host in the rendezvous", 50*time.Millisecond, func() bool {
		return advertised(ctx, s.Hosts[5], all...)
	}); err != nil {
		t.Fatal(err)
	}
	from := s.Hosts[3]
	subs := subscribeAll(t, ctx, p2p.KindRecords, from, all)
	data := []byte("one record for everyone")
	if err := from.Publish(ctx, p2p.KindRecords, data); err != nil {
		t.Fatal(err)
	}
	expectAll(t, ctx, subs, data)
}

func TestSwarmSurvivesBootstrapLoss(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var key crypto.PrivKey
	s, err := p2ptest.Start(ctx, 6, func(i int, c *p2p.Config) {
		if i == 0 {
			key = c.Identity
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	hosts := s.Hosts
	if err := p2ptest.Poll(ctx, "swarm to form", 50*time.Millisecond, func() bool {
		return p2ptest.FoundAll(s.All())
	}); err != nil {
		t.Fatal(err)
	}
	cached := hosts[0].KnownPeers()
	if err := s.Boot.Close(); err != nil {
		t.Fatal(err)
	}
	if err := hosts[0].Close(); err != nil {
		t.Fatal(err)
	}
	rest := hosts[1:]
	for i, h := range rest {
		if n := len(h.Peers()); n < len(rest)-1 {
			t.Errorf("host %d holds %d connections after the bootstrap left, want >= %d", i, n, len(rest)-1)
		}
	}
	subs := subscribeAll(t, ctx, p2p.KindShards, rest[0], rest)
	data := []byte("gossip without the bootstrap")
	if err := rest[0].Publish(ctx, p2p.KindShards, data); err != nil {
		t.Fatal(err)
	}
	expectAll(t, ctx, subs, data)

	// Restart host 0 with its old key: the bootstrap is dead, only the cached peers answer.
	cfg := p2ptest.Config(key)
	cfg.Bootstrap = []peer.AddrInfo{s.Boot.AddrInfo()}
	cfg.Cached = cached
	back, err := p2p.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = back.Close() })
	if back.ID() != hosts[0].ID() {
		t.Fatalf("restarted host has ID %s, want %s", back.ID(), hosts[0].ID())
	}
	if err := p2ptest.Poll(ctx, "restarted host to reconnect", 20*time.Millisecond, func() bool {
		return p2ptest.Missing(back, rest) == 0
	}); err != nil {
		t.Fatal(err)
	}
	subs = append(subs, subscribeAll(t, ctx, p2p.KindShards, rest[1], []*p2p.Host{back})...)
	if err := p2ptest.Poll(ctx, "topic peers", 20*time.Millisecond, func() bool {
		return len(rest[1].TopicPeers(p2p.KindShards)) >= len(rest)
	}); err != nil {
		t.Fatal(err)
	}
	data = []byte("gossip reaches the restarted host")
	if err := rest[1].Publish(ctx, p2p.KindShards, data); err != nil {
		t.Fatal(err)
	}
	expectAll(t, ctx, subs, data)
}

// advertised reports whether a rendezvous lookup from h finds every one of hosts.
func advertised(ctx context.Context, h *p2p.Host, hosts ...*p2p.Host) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	found, err := h.LookupRendezvous(ctx)
	if err != nil {
		return false
	}
	ids := map[peer.ID]bool{}
	for _, ai := range found {
		ids[ai.ID] = true
	}
	for _, o := range hosts {
		if !ids[o.ID()] {
			return false
		}
	}
	return true
}

// A swarm on go-libp2p's in-memory network forms as one on sockets does: every host
// in a full mesh of each topic (p2ptest.Form), and a message reaches all.
func TestSwarmFormsInMemory(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := p2ptest.StartOn(ctx, "mem", 7, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	all := s.All()
	subs := subscribeAll(t, ctx, p2p.KindRecords, s.Hosts[2], s.Hosts)
	var last p2ptest.Formation
	if err := p2ptest.Poll(ctx, "the swarm to form", 20*time.Millisecond, func() bool {
		last = p2ptest.Form(all, []string{p2p.KindRecords})
		return last.Formed()
	}); err != nil {
		t.Fatalf("%v: %v", err, last)
	}
	data := []byte("one record over memory")
	if err := s.Hosts[4].Publish(ctx, p2p.KindRecords, data); err != nil {
		t.Fatal(err)
	}
	expectAll(t, ctx, subs, data)
}
