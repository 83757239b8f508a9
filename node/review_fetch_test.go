package node

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/incentives/incentivestest"
	"github.com/lowband/lowband/node/core"
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

// countingPeer answers no fetch request (empty), each once released, counting them.
type countingPeer struct {
	mu      sync.Mutex
	asked   int
	started chan struct{}
	release chan struct{}
}

func (p *countingPeer) Request(ctx context.Context, _ peer.ID, _ string, _ []byte, _ int) ([]byte, error) {
	p.mu.Lock()
	p.asked++
	p.mu.Unlock()
	select {
	case p.started <- struct{}{}:
	default:
	}
	select {
	case <-p.release:
	case <-ctx.Done():
	}
	return nil, nil
}

// TestShardFetchStopsOnceItsRoundClosed: a fetch of a missing shard asks no further peer
// once the shard's round has closed, so that peers slow to answer cannot keep the fetch
// slots busy with rounds that are over while later rounds' fetches are dropped.
func TestShardFetchStopsOnceItsRoundClosed(t *testing.T) {
	slow := &countingPeer{started: make(chan struct{}, 1), release: make(chan struct{})}
	ft := newFullTest(t, 16, func(c *fullConfig) {
		c.Fetch = &fetchClient{host: slow, maxShard: c.Wire.shardCap(), timeout: time.Minute}
	})
	peers := []peer.ID{"p1", "p2", "p3", "p4"}
	if !ft.f.wantShard(peers, slot{round: 10, peer: incentivestest.PeerID("alice")}) {
		t.Fatal("no fetch started")
	}
	<-slow.started
	ft.f.setView(core.View{NextClose: 11, NextLocal: 12, Window: 2})
	close(slow.release)
	ft.f.wg.Wait()
	if slow.asked != 1 {
		t.Fatalf("asked %d peers for a shard of a closed round, want only the one asked before it closed", slow.asked)
	}
}
