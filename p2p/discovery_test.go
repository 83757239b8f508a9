package p2p_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	dht "github.com/libp2p/go-libp2p-kad-dht"
	dhtpb "github.com/libp2p/go-libp2p-kad-dht/pb"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/p2p/p2ptest"
)

// A host keeps a connected peer out of its routing table until the peer has answered
// one DHT request. When that first check fails (the bootstrap was too busy to answer
// in time, say), kad-dht looks again only two minutes later: the host sits connected
// with an empty table, so it can neither advertise nor look anyone up. The host must
// check its connected peers again soon.
func TestEmptyTableRecheckedWhileConnected(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	boot, err := libp2p.New(libp2p.ListenAddrStrings(p2ptest.ListenTCP...))
	if err != nil {
		t.Fatal(err)
	}
	defer boot.Close()
	// The bootstrap speaks the DHT protocol but fails every request at first.
	kad := p2p.DHTPrefix(p2ptest.Network) + "/kad/1.0.0"
	boot.SetStreamHandler(kad, func(s network.Stream) { _ = s.Reset() })
	c := p2ptest.Config(p2ptest.Key())
	c.Bootstrap = []peer.AddrInfo{{ID: boot.ID(), Addrs: boot.Addrs()}}
	h, err := p2p.New(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if err := p2ptest.Poll(ctx, "a connection", 10*time.Millisecond, func() bool { return len(h.ConnectedPeers()) > 0 }); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // the first check fails
	// Now the bootstrap answers: the host must take it into its table well before
	// kad-dht's own two-minute look.
	d, err := dht.New(ctx, boot, dht.ProtocolPrefix(p2p.DHTPrefix(p2ptest.Network)), dht.Mode(dht.ModeServer))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := p2ptest.Poll(ctx, "the bootstrap in the routing table", 10*time.Millisecond, func() bool {
		return h.RoutingTableSize() > 0
	}); err != nil {
		t.Fatalf("%v: connected to %d peers, routing table empty", err, len(h.ConnectedPeers()))
	}
}

// A host looks the rendezvous up only while it has fewer connections than it seeks:
// every lookup costs the DHT nodes nearest the rendezvous key a reply listing every
// advertised peer, so a swarm whose hosts kept looking loaded them in proportion to
// its size squared.
func TestNoRendezvousLookupWithEnoughPeers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	reg := prometheus.NewRegistry()
	s, err := p2ptest.Start(ctx, 3, func(i int, c *p2p.Config) {
		if i == 0 {
			c.Registerer = reg
			c.ConnLow, c.ConnHigh = 1, 8 // one connection is all it seeks
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := s.Hosts[0]
	if err := p2ptest.Poll(ctx, "a routing table", 10*time.Millisecond, func() bool { return h.RoutingTableSize() > 0 }); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // a host short of peers looks at once, then every second or so
	if n := counter(t, reg, "lowband_p2p_rendezvous_lookups_total"); n != 0 {
		t.Fatalf("%v rendezvous lookups by a host with %d connections, seeking 1", n, len(h.ConnectedPeers()))
	}
}

func counter(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// A joining host looks up its own key (Kademlia's join) and not a random key in
// every bucket as well: kad-dht's own refresh, run when the host starts, whenever a
// peer enters a table of at most ten and once more after that, made every host of a
// forming swarm of N send requests to nearly every other. The bootstrap here counts
// the lookups (FIND_NODE) the host sends it: one to check it before taking it into
// the table, one for the host's own key, one to advertise the rendezvous.
func TestJoinLooksUpOwnKeyOnly(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	boot, err := libp2p.New(libp2p.ListenAddrStrings(p2ptest.ListenTCP...))
	if err != nil {
		t.Fatal(err)
	}
	defer boot.Close()
	var mu sync.Mutex
	finds := map[peer.ID]int{}
	d, err := dht.New(ctx, boot, dht.ProtocolPrefix(p2p.DHTPrefix(p2ptest.Network)), dht.Mode(dht.ModeServer),
		dht.OnRequestHook(func(_ context.Context, s network.Stream, m *dhtpb.Message) {
			if m.GetType() == dhtpb.Message_FIND_NODE {
				mu.Lock()
				finds[s.Conn().RemotePeer()]++
				mu.Unlock()
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	reg := prometheus.NewRegistry()
	c := p2ptest.Config(p2ptest.Key())
	c.Bootstrap = []peer.AddrInfo{{ID: boot.ID(), Addrs: boot.Addrs()}}
	c.ConnLow, c.ConnHigh = 1, 8 // no rendezvous lookups: one connection is all it seeks
	c.Registerer = reg
	h, err := p2p.New(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if err := p2ptest.Poll(ctx, "a refreshed routing table", 10*time.Millisecond, func() bool {
		return counter(t, reg, "lowband_p2p_routing_table_refreshes_total") >= 1
	}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // kad-dht's own refresh would run by now; the next advertisement is 5 s off
	mu.Lock()
	n := finds[h.ID()]
	mu.Unlock()
	if n > 3 {
		t.Fatalf("the joining host sent its bootstrap %d lookups, want at most 3 (check, own key, rendezvous)", n)
	}
	if h.RoutingTableSize() != 1 {
		t.Fatalf("routing table of %d peers, want the bootstrap", h.RoutingTableSize())
	}
	if n := counter(t, reg, "lowband_p2p_routing_table_refreshes_total"); n != 1 {
		t.Fatalf("%v refreshes, want 1", n)
	}
}
