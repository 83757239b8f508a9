package node

import (
	"context"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/incentives/incentivestest"
	"github.com/lowband/lowband/p2p"
)

// TestSlowShardFetchesLeaveRoomForBundleFetches: fetches of the slots a closing round
// lacks, asked of a peer that never answers, do not take the slots of bundle fetches: a
// shard whose bundle is unknown still gets it fetched from its neighbour and reaches the
// loop.
func TestSlowShardFetchesLeaveRoomForBundleFetches(t *testing.T) {
	flooder := peer.ID("flooder")
	alice := incentivestest.New("net-a", "run-a").Bundle("alice", "")
	peers := &routedPeers{flooder: flooder, bundle: alice, release: make(chan struct{})}
	defer close(peers.release)
	ft := newFullTest(t, 16, func(c *fullConfig) {
		c.Fetch = &fetchClient{host: peers, maxShard: c.Wire.shardCap(), timeout: time.Minute}
		c.MaxAsync = 4
	})
	for i := range ft.f.cfg.MaxAsync + 4 {
		ft.f.wantShard([]peer.ID{flooder}, slot{round: 10, peer: incentivestest.PeerID("flooder"), index: uint32(i)})
	}
	shard := marshalShard(t, ft.fx.Shard("alice", alice, 10, 0, []byte("payload")))
	if r := ft.vals[p2p.KindShards](context.Background(), neighbor, shard); r != p2p.Ignore {
		t.Fatalf("shard before its bundle: %v", r)
	}
	select {
	case <-ft.inbox:
	case <-time.After(5 * time.Second):
		t.Fatal("the shard's bundle was never fetched: slow shard fetches hold every fetch slot")
	}
}
