package p2p

import (
	"context"
	"crypto/rand"
	"log/slog"
	"slices"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"
	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"
)

func TestPublicAddrsDropsWhatTheInternetCannotDial(t *testing.T) {
	keep := ma.StringCast("/ip4/192.168.1.10/tcp/4001")
	for _, c := range []struct {
		addr string
		want bool
	}{
		{"/ip4/1.2.3.4/tcp/4001", true},
		{"/ip6/2a01:4f8::1/udp/4001/quic-v1", true},
		{"/dns4/node.example.com/tcp/4001", true},
		{"/ip4/192.168.1.10/tcp/4001", true}, // in keep
		{"/ip4/127.0.0.1/tcp/4001", false},
		{"/ip6/::1/tcp/4001", false},
		{"/ip4/10.0.0.7/tcp/4001", false},
		{"/ip4/172.16.3.4/tcp/4001", false},
		{"/ip4/192.168.1.11/tcp/4001", false},
		{"/ip4/100.64.0.1/tcp/4001", false}, // carrier-grade NAT
		{"/ip4/169.254.1.1/tcp/4001", false},
		{"/ip6/fe80::1/tcp/4001", false},
		{"/ip6/fd00::1/tcp/4001", false},
		{"/ip4/0.0.0.0/tcp/4001", false},
		{"/ip6/::/tcp/4001", false},
		{"/dns4/localhost/tcp/4001", false},
	} {
		a := ma.StringCast(c.addr)
		if got := len(publicAddrs([]ma.Multiaddr{a}, []ma.Multiaddr{keep})) == 1; got != c.want {
			t.Errorf("%s kept = %v, want %v", c.addr, got, c.want)
		}
	}
}

// TestPublicOnlySignedPeerRecordHasNoLoopbackAddress: the record a public-only host
// signs for identify names no loopback address (on loopback alone it signs none),
// while a host without PublicOnly signs its loopback address.
func TestPublicOnlySignedPeerRecordHasNoLoopbackAddress(t *testing.T) {
	for _, publicOnly := range []bool{true, false} {
		h := newTestHost(t, publicOnly)
		cab, ok := peerstore.GetCertifiedAddrBook(h.h.Peerstore())
		if !ok {
			t.Fatal("peerstore keeps no signed records")
		}
		var addrs []ma.Multiaddr // no record: no address signed
		if env := cab.GetPeerRecord(h.ID()); env != nil {
			rec, err := env.Record()
			if err != nil {
				t.Fatal(err)
			}
			addrs = rec.(*peer.PeerRecord).Addrs
		}
		if loop := slices.ContainsFunc(addrs, manet.IsIPLoopback); loop == publicOnly {
			t.Errorf("PublicOnly %v: signed record names %v", publicOnly, addrs)
		}
	}
}

// newTestHost starts a host on a loopback port that joins no topic and dials nobody.
func newTestHost(t *testing.T, publicOnly bool) *Host {
	t.Helper()
	key, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	h, err := New(context.Background(), Config{Identity: key, Listen: []string{"/ip4/127.0.0.1/tcp/0"},
		Network: "test-0000", Run: "run-0", PublicOnly: publicOnly, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h
}

// TestAnnounceKeepsRelayAddrs: a host with announce addresses still announces the
// /p2p-circuit addresses its relay reservations give it, or peers could not reach it
// through the relay.
func TestAnnounceKeepsRelayAddrs(t *testing.T) {
	announce := []ma.Multiaddr{ma.StringCast("/ip4/1.2.3.4/tcp/4001")}
	circuit := ma.StringCast("/ip4/5.6.7.8/tcp/4001/p2p/12D3KooWGRUVh6zGsDLTPHDA5ib1hLwrkdZLkb7H2zxEk2oHVqbU/p2p-circuit")
	found := []ma.Multiaddr{ma.StringCast("/ip4/192.168.1.10/tcp/4001"), circuit}
	for _, publicOnly := range []bool{true, false} {
		got := addrsFactory(announce, publicOnly)(found)
		if !slices.ContainsFunc(got, circuit.Equal) || !slices.ContainsFunc(got, announce[0].Equal) || len(got) != 2 {
			t.Errorf("PublicOnly %v: announced %v, want %v and %v", publicOnly, got, announce[0], circuit)
		}
	}
}
