package node

import (
	"context"
	"testing"
	"time"

	"github.com/lowband/lowband/incentives/incentivestest"
	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/p2p/p2ptest"
)

// TestBundleFetchedFromTheSignerWhenTheForwarderServesNone: a shard whose bundle the
// receiver lacks comes from a neighbour that serves no fetches (as a bootstrap node
// forwards gossip but serves nothing); the receiver then asks the shard's signer, which
// holds its own bundle, and the shard reaches the loop.
func TestBundleFetchedFromTheSignerWhenTheForwarderServesNone(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	served := newFullTest(t, 16, nil)
	fx := served.fx
	sw, err := p2ptest.Start(ctx, 2, func(i int, c *p2p.Config) {
		if i == 1 {
			c.Identity = incentivestest.Identity("alice")
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sw.Close()
	forwarder, receiver, signer := sw.Boot, sw.Hosts[0], sw.Hosts[1]
	if signer.ID().String() != incentivestest.PeerID("alice") {
		t.Fatalf("signer host is %s, want alice's %s", signer.ID(), incentivestest.PeerID("alice"))
	}
	alice := fx.Bundle("alice", "")
	served.holdBundle(alice)
	signer.Handle(string(p2p.FetchProtocol(fx.Network)), maxFetchRequest, newFetchServer(served.f.reg, served.f.content, served.f.records).handle)
	if err := receiver.Connect(ctx, signer.AddrInfo()); err != nil {
		t.Fatal(err)
	}

	ft := gossipShard(t, ctx, forwarder, receiver, fx.Network, marshalShard(t, fx.Shard("alice", alice, 10, 0, []byte("payload"))))
	if n := ft.count(p2p.KindAttest, p2p.Accept, reasonOK); n != 1 {
		t.Fatalf("%v bundles fetched, want 1", n)
	}
}
