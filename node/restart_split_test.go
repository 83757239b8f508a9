package node

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/p2p/p2ptest"
)

// TestEqualHalvesOnTwoLineagesConverge: a swarm of four nodes of equal stake splits into
// two halves that cannot reach each other for 8 rounds. Neither half carries a quorum, so
// each closes its rounds alone at the maximum deadline, from its own state: once they
// reach each other again, their lineages parted before the repair window (2 rounds), no
// list vote can mend them, and no root carries a majority of the stake to rewind to. The
// head watch then takes the root of most power, ties to the half with the least peer ID
// (pluralityOf): the half that does not hold it replaces its rounds with the other's,
// and all four hold one root. Nobody is slashed for it.
func TestEqualHalvesOnTwoLineagesConverge(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 240*time.Second)
	defer cancel()
	fences := make([]*p2ptest.Fence, 4)
	swarm, _, boot := startSwarmWith(t, ctx, 4, equalStakesApart, func(i int, o *Options) {
		fences[i] = &p2ptest.Fence{}
		o.gater = fences[i]
	})
	halves := [2][]*Node{swarm[:2], swarm[2:]}
	poll := swarmPoll(t, ctx, swarm)
	poll("every node closing round 3", time.Minute, func() bool { return lowHead(swarm) >= 3 })

	ids := func(ns []*Node) []peer.ID {
		var out []peer.ID
		for _, n := range ns {
			out = append(out, n.ID())
		}
		return out
	}
	for i, n := range swarm {
		other := ids(halves[1-i/2])
		if i >= 2 { // the bootstrap node stays on the first half's side
			other = append(other, boot.ID())
		}
		fences[i].Raise(n.host, other...)
	}
	from := max(medianHead(halves[0]), medianHead(halves[1]))
	t.Logf("split after round %d", from)
	poll("both halves closing 8 rounds apart", time.Minute, func() bool { return lowHead(swarm) >= from+8 })
	split := lowHead(swarm)
	if a, b := storedRoot(t, halves[0][0], split), storedRoot(t, halves[1][0], split); bytes.Equal(a, b) {
		t.Fatalf("the halves hold one root of round %d while split: %x", split, a)
	}
	for _, f := range fences {
		f.Lower()
	}
	for i, a := range swarm {
		reconnect(t, ctx, a, append([]*Node{boot}, slices.Delete(slices.Clone(swarm), i, i+1)...)...)
	}
	restored := 0
	for _, n := range swarm {
		h, _ := head(n)
		restored = max(restored, int(h))
	}
	t.Logf("halves let back at round %d", restored)

	var at uint64
	poll("one root on all four", 150*time.Second, func() bool {
		at = oneRootPast(t, swarm, uint64(restored))
		return at > 0
	})
	// The store holds their rounds a moment before the resync is counted.
	var rewound []string
	for counted := time.Now().Add(10 * time.Second); len(rewound) < 2 && time.Now().Before(counted); time.Sleep(50 * time.Millisecond) {
		rewound = rewound[:0]
		for i, n := range swarm {
			if rs := n.lastResync.Load(); rs != nil && rs.Replaced > 0 {
				rewound = append(rewound, fmt.Sprint(i))
			}
		}
	}
	t.Logf("one root at round %d; rewound: nodes %v", at, rewound)
	if len(rewound) < 2 {
		t.Errorf("one root at round %d, and %d nodes replaced rounds of their own: a half of two must have", at, len(rewound))
	}
	for _, n := range swarm {
		if slashed := n.trainingStatus().Slashed; len(slashed) > 0 {
			t.Errorf("%s slashed %v", n.ID(), slashed)
		}
	}
}

// TestThreeEqualNodesEndOnOneRoot: one of three nodes of equal stake is cut off for 8
// rounds while all close rounds at the maximum deadline (no side has the quorum). Once it
// is back, its votes from its own lineage may tip the list decisions of the two that
// stayed together until they part as well, each on a lineage of its own: three roots, no
// majority (1 in 5 runs before the record of most power decided). However it goes, the
// three end on one root, and nobody is slashed.
func TestThreeEqualNodesEndOnOneRoot(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 240*time.Second)
	defer cancel()
	gate := &p2ptest.Gate{}
	swarm, _, boot := startSwarmWith(t, ctx, 3, equalStakesApart, func(i int, o *Options) {
		if i == 0 {
			o.gater = gate
		}
	})
	poll := swarmPoll(t, ctx, swarm)
	poll("every node closing round 3", time.Minute, func() bool { return lowHead(swarm) >= 3 })
	gate.Cut(swarm[0].host)
	from, _ := head(swarm[0])
	poll("both sides closing 8 rounds apart", time.Minute, func() bool { return lowHead(swarm) >= from+8 })
	gate.Restore()
	restored := uint64(0)
	for _, n := range swarm {
		h, _ := head(n)
		restored = max(restored, h)
	}
	reconnect(t, ctx, swarm[0], append([]*Node{boot}, swarm[1:]...)...)
	t.Logf("let back at round %d, cut off after round %d", restored, from)
	var at uint64
	poll("one root on all three", 150*time.Second, func() bool {
		at = oneRootPast(t, swarm, restored)
		return at > 0
	})
	var resynced []string
	for i, n := range swarm {
		if rs := n.lastResync.Load(); rs != nil {
			resynced = append(resynced, fmt.Sprintf("node %d: %+v", i, *rs))
		}
	}
	t.Logf("one root at round %d; resyncs: %v", at, resynced)
	for _, n := range swarm {
		if slashed := n.trainingStatus().Slashed; len(slashed) > 0 {
			t.Errorf("%s slashed %v", n.ID(), slashed)
		}
	}
}

// equalStakesApart is the spec of the split tests: equal stakes, a quorum no side of a
// split reaches (each closes its rounds at the maximum deadline of 2 s), a repair window
// of 2 and no checkpoint in the run.
func equalStakesApart(s *configs.Spec) {
	s.Round = configs.RoundSpec{Quorum: 0.9, DeadlineMin: 1, DeadlineMax: 2}
	s.Agreement.CheckpointEvery = 1000
	s.Agreement.RepairDepth = 2
	for id := range s.Incentives.Stakes {
		s.Incentives.Stakes[id] = 100
	}
}

// swarmPoll returns a poll of cond for at most limit that, when it times out, logs where
// each node of swarm stands and fails the test.
func swarmPoll(t *testing.T, ctx context.Context, swarm []*Node) func(what string, limit time.Duration, cond func() bool) {
	return func(what string, limit time.Duration, cond func() bool) {
		t.Helper()
		pctx, cancel := context.WithTimeout(ctx, limit)
		defer cancel()
		if err := p2ptest.Poll(pctx, what, 50*time.Millisecond, cond); err != nil {
			for _, n := range swarm {
				h, _ := head(n)
				t.Logf("%s: head %d, root %x, agreement %+v, last resync %+v", n.ID(), h, storedRoot(t, n, h), n.train.loop.Agreement(), n.lastResync.Load())
			}
			t.Fatal(err)
		}
	}
}

// oneRootPast is the last round every node of swarm closed, when it is past round after
// and all of them hold one state root of it; 0 otherwise.
func oneRootPast(t *testing.T, swarm []*Node, after uint64) uint64 {
	m := lowHead(swarm)
	if m <= after {
		return 0
	}
	want := storedRoot(t, swarm[0], m)
	for _, n := range swarm[1:] {
		if !bytes.Equal(storedRoot(t, n, m), want) {
			return 0
		}
	}
	return m
}

// reconnect dials n to each of to (a partition's gate or fence lowered: the hosts do not
// reconnect at once by themselves).
func reconnect(t *testing.T, ctx context.Context, n *Node, to ...*Node) {
	t.Helper()
	for _, p := range to {
		if err := n.host.Connect(ctx, p.host.AddrInfo()); err != nil {
			t.Fatalf("reconnecting %s to %s: %v", n.ID(), p.ID(), err)
		}
	}
}
