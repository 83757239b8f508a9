package p2p_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"

	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/p2p/p2ptest"
)

// learned is what h's peerstore holds of p once h has identified p.
func learned(t *testing.T, ctx context.Context, h *p2p.Host, p peer.ID) []ma.Multiaddr {
	t.Helper()
	if err := p2ptest.Poll(ctx, "identify", 10*time.Millisecond, func() bool { return h.AgentVersion(p) != "" }); err != nil {
		t.Fatal(err)
	}
	for _, ai := range h.KnownPeers() {
		if ai.ID == p {
			return ai.Addrs
		}
	}
	return nil
}

func TestPublicOnlyAnnouncesNoLoopbackAddress(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := p2ptest.Start(ctx, 2, func(i int, c *p2p.Config) { c.PublicOnly = i == 0 })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	boot, public, plain := s.Boot, s.Hosts[0], s.Hosts[1]
	if got := public.Addrs(); len(got) > 0 {
		t.Errorf("public-only host on 127.0.0.1 announces %v, want nothing", got)
	}
	if got := learned(t, ctx, boot, public.ID()); len(got) > 0 {
		t.Errorf("its peer learned %v of it through identify, want nothing", got)
	}
	// A host without PublicOnly announces its loopback address, and identify carries it.
	if !slices.ContainsFunc(plain.Addrs(), manet.IsIPLoopback) {
		t.Errorf("host without PublicOnly announces %v, want its loopback address", plain.Addrs())
	}
	if got := learned(t, ctx, boot, plain.ID()); !slices.ContainsFunc(got, manet.IsIPLoopback) {
		t.Errorf("its peer learned %v of the host without PublicOnly, want its loopback address", got)
	}
}

func TestPublicOnlyKeepsAnnounceAddresses(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	announce := []string{"/ip4/192.168.1.10/tcp/4001", "/dns4/node.example.com/tcp/4001"}
	s, err := p2ptest.Start(ctx, 1, func(i int, c *p2p.Config) {
		if i == 0 {
			c.PublicOnly, c.Announce = true, announce
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := s.Hosts[0]
	got := learned(t, ctx, s.Boot, h.ID())
	for _, want := range announce {
		a := ma.StringCast(want)
		if !slices.ContainsFunc(h.AddrInfo().Addrs, a.Equal) {
			t.Errorf("public-only host announces %v, want %s (configured)", h.AddrInfo().Addrs, want)
		}
		if !slices.ContainsFunc(got, a.Equal) {
			t.Errorf("its peer learned %v, want %s (configured)", got, want)
		}
	}
}

// TestPublicOnlyRoutingTableRefusesLoopbackPeers: a public-only host keeps a peer it
// knows only by a loopback address out of its DHT routing table, while a host without
// PublicOnly, in the same swarm, takes the same peer in.
func TestPublicOnlyRoutingTableRefusesLoopbackPeers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := p2ptest.Start(ctx, 2, func(i int, c *p2p.Config) { c.PublicOnly = i == 0 })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	boot, public, plain := s.Boot, s.Hosts[0], s.Hosts[1]
	holds := func(h *p2p.Host, p peer.ID) bool { return slices.Contains(h.RoutingTable(), p) }
	if err := p2ptest.Poll(ctx, "tables", 10*time.Millisecond, func() bool {
		return holds(plain, boot.ID()) && holds(boot, public.ID()) && public.AgentVersion(boot.ID()) != ""
	}); err != nil {
		t.Fatal(err)
	}
	if got := public.RoutingTable(); len(got) > 0 {
		t.Errorf("public-only host's routing table holds %v, known only by loopback addresses; want none", got)
	}
}
