package p2p_test

import (
	"context"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	dht "github.com/libp2p/go-libp2p-kad-dht"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

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
