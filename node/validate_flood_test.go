package node

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/incentives/incentivestest"
	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/verify"
)

// slowPeer answers fetch requests only when released, counting those in flight.
type slowPeer struct {
	mu                sync.Mutex
	inFlight, maxSeen int
	release           chan struct{}
}

func (p *slowPeer) Request(ctx context.Context, _ peer.ID, _ string, _ []byte, _ int) ([]byte, error) {
	p.mu.Lock()
	p.inFlight++
	p.maxSeen = max(p.maxSeen, p.inFlight)
	p.mu.Unlock()
	defer func() { p.mu.Lock(); p.inFlight--; p.mu.Unlock() }()
	select {
	case <-p.release:
	case <-ctx.Done():
	}
	return nil, nil
}

// TestJunkFloodOnEveryTopicBounded: junk on every topic is refused and counted, and a
// flood of shards naming bundles nobody has fills neither the stash past its bound nor
// the node with fetches: nothing reaches the loop, nothing blocks.
func TestJunkFloodOnEveryTopicBounded(t *testing.T) {
	slow := &slowPeer{release: make(chan struct{})}
	ft := newFullTest(t, 16, func(c *fullConfig) {
		c.Fetch = &fetchClient{host: slow, maxShard: c.Wire.shardCap(), timeout: time.Minute}
		c.MaxAsync = 4
		c.Stash = NewStash(StashConfig{MaxEntries: 64})
	})
	rng := rand.New(rand.NewPCG(1, 2))
	for _, kind := range p2p.Kinds {
		for i := range 250 {
			junk := make([]byte, rng.IntN(2048))
			for j := range junk {
				junk[j] = byte(rng.Uint32())
			}
			if r := ft.validate(kind, junk); r == p2p.Accept {
				t.Fatalf("%s junk %d accepted", kind, i)
			}
		}
	}
	key := ft.fx.Key("flooder")
	for i := range 400 {
		var bh [32]byte
		binary.BigEndian.PutUint64(bh[:], uint64(i))
		h := verify.ShardHeader{Network: ft.fx.Network, Run: ft.fx.Run, Round: 10, Peer: incentivestest.PeerID("flooder"), Count: 1, BundleHash: bh[:]}
		s, err := verify.SignShard(key, h, []byte("payload"))
		if err != nil {
			t.Fatal(err)
		}
		if r := ft.validate(p2p.KindShards, marshalShard(t, s)); r != p2p.Ignore {
			t.Fatalf("shard %d under an unknown bundle: %v", i, r)
		}
	}
	if n, _ := ft.f.stash.Len(); n > 64 {
		t.Fatalf("stash holds %d entries, bound 64", n)
	}
	close(slow.release)
	ft.inboxEmpty("junk flood")
	if slow.maxSeen > 4 || ft.count(p2p.KindShards, p2p.Ignore, reasonBundleUnknown) != 400 {
		t.Fatalf("%d fetches at once (bound 4), %v counted", slow.maxSeen, ft.count(p2p.KindShards, p2p.Ignore, reasonBundleUnknown))
	}
}

// routedPeers answers fetch requests by peer: a flooder that never answers, or an honest
// neighbour holding a bundle.
type routedPeers struct {
	flooder peer.ID
	bundle  []byte
	release chan struct{}
}

func (p *routedPeers) Request(ctx context.Context, to peer.ID, _ string, _ []byte, _ int) ([]byte, error) {
	if to == p.flooder {
		select {
		case <-p.release:
		case <-ctx.Done():
		}
		return nil, nil
	}
	return p.bundle, nil
}

// TestFetchFloodLeavesRoomForOtherNeighbours: one neighbour forwarding shards under
// bundles it never serves cannot take every fetch slot: a shard forwarded by another
// neighbour still gets its bundle fetched and reaches the loop.
func TestFetchFloodLeavesRoomForOtherNeighbours(t *testing.T) {
	flooder := peer.ID("flooder")
	alice := incentivestest.New("net-a", "run-a").Bundle("alice", "")
	peers := &routedPeers{flooder: flooder, bundle: alice, release: make(chan struct{})}
	defer close(peers.release)
	ft := newFullTest(t, 16, func(c *fullConfig) {
		c.Fetch = &fetchClient{host: peers, maxShard: c.Wire.shardCap(), timeout: time.Minute}
		c.MaxAsync = 4
	})
	key := ft.fx.Key("flooder")
	for i := range 10 {
		var bh [32]byte
		binary.BigEndian.PutUint64(bh[:], uint64(i))
		h := verify.ShardHeader{Network: ft.fx.Network, Run: ft.fx.Run, Round: 10, Peer: incentivestest.PeerID("flooder"), Count: 1, BundleHash: bh[:]}
		s, err := verify.SignShard(key, h, []byte("payload"))
		if err != nil {
			t.Fatal(err)
		}
		ft.vals[p2p.KindShards](context.Background(), flooder, marshalShard(t, s))
	}
	shard := marshalShard(t, ft.fx.Shard("alice", alice, 10, 0, []byte("payload")))
	if r := ft.vals[p2p.KindShards](context.Background(), neighbor, shard); r != p2p.Ignore {
		t.Fatalf("shard before its bundle: %v", r)
	}
	select {
	case <-ft.inbox:
	case <-time.After(5 * time.Second):
		t.Fatal("the honest neighbour's shard never reached the loop: the flooder holds every fetch slot")
	}
}

// FuzzFullChecks: no bytes on any topic make the full checks panic, and what reaches the
// loop is an accepted shard or evidence, or evidence the node made from a refused shard,
// that checks out.
func FuzzFullChecks(f *testing.F) {
	ft := newFullTest(f, 4, nil)
	alice := ft.fx.Bundle("alice", "")
	ft.holdBundle(alice)
	f.Add(marshalShard(f, ft.fx.Shard("alice", alice, 10, 0, []byte("payload"))))
	f.Add(marshalShard(f, ft.fx.Shard("alice", alice, 10, 1, []byte("bad payload"))))
	f.Add(alice)
	f.Add(ft.fx.Equivocation("alice", 10, 0, "x").Marshal())
	f.Add(ft.fx.InvalidContent("alice", 10, 0).Marshal())
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, kind := range p2p.Kinds {
			r := ft.validate(kind, data)
			ft.f.wg.Wait() // evidence the node made arrives from its own goroutine
			for len(ft.inbox) > 0 {
				switch ev := (<-ft.inbox).(type) {
				case shardIn:
					if kind != p2p.KindShards || r != p2p.Accept {
						t.Fatalf("%s: %v, yet a shard reached the loop", kind, r)
					}
				case evidenceIn:
					if !(kind == p2p.KindEvidence && r == p2p.Accept) && !(kind == p2p.KindShards && r == p2p.Reject) {
						t.Fatalf("%s: %v, yet evidence reached the loop", kind, r)
					}
					if _, err := ft.fx.Checker().Check(ev.ev); err != nil {
						t.Fatalf("%s: evidence that does not check out reached the loop: %v", kind, err)
					}
				}
			}
		}
	})
}
