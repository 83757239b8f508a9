package node

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/p2p/p2ptest"
)

// head is the last round n closed, and whether it closed any.
func head(n *Node) (uint64, bool) {
	a := n.train.loop.Agreement()
	return a.Head, n.train.prog.status().NextRound > 0
}

// storedRoot is the state root of n's stored record of round r, nil if it has none.
func storedRoot(t *testing.T, n *Node, r uint64) []byte {
	t.Helper()
	rec, err := n.ledger.st.Record(r)
	if err != nil {
		t.Fatal(err)
	}
	if rec == nil {
		return nil
	}
	return rec.NewRoot
}

// lowHead is the lowest head of nodes (0 while one has closed no round).
func lowHead(nodes []*Node) uint64 {
	low := ^uint64(0)
	for _, n := range nodes {
		h, ok := head(n)
		if !ok {
			return 0
		}
		low = min(low, h)
	}
	return low
}

// medianHead is the median head of nodes: the round most of them closed.
func medianHead(nodes []*Node) uint64 {
	hs := make([]uint64, len(nodes))
	for i, n := range nodes {
		hs[i], _ = head(n)
	}
	slices.Sort(hs)
	return hs[len(hs)/2]
}

// without reports whether most of nodes hold a record of round r that does not include
// peer.
func without(t *testing.T, nodes []*Node, r uint64, peer string) bool {
	t.Helper()
	n := 0
	for _, nd := range nodes {
		rec, err := nd.ledger.st.Record(r)
		if err != nil {
			t.Fatal(err)
		}
		if rec != nil && !slices.ContainsFunc(rec.Contributions, func(c incentives.Contribution) bool { return c.Peer == peer }) {
			n++
		}
	}
	return 2*n > len(nodes)
}

// majorityRoot is the stored state root of round r that more than half of nodes hold, nil
// if none.
func majorityRoot(t *testing.T, nodes []*Node, r uint64) []byte {
	t.Helper()
	count := map[string]int{}
	for _, n := range nodes {
		if root := storedRoot(t, n, r); root != nil {
			count[string(root)]++
			if 2*count[string(root)] > len(nodes) {
				return root
			}
		}
	}
	return nil
}

// TestPartitionedNodeRepairsToTheCanonicalRoot: in a swarm of 6, one node's traffic is
// dropped (every connection closed and refused) while the 5 others close 2 rounds; it
// closes them alone meanwhile. Once it is let back, it learns the others' records of the
// rounds it missed, fetches the contributions they list by CID, closes those rounds
// again, and within 2 rounds of the others holds their state root, the same stored
// records for the rounds it was cut off, and says it agrees.
func TestPartitionedNodeRepairsToTheCanonicalRoot(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	gate := &p2ptest.Gate{}
	// Deadlines long enough to keep a loaded swarm in step, short enough that the
	// cut-off node, short of the quorum, closes rounds alone at the maximum while the
	// others close theirs without it at the minimum; rounds stay open to repair for
	// longer than the default 3, as a loaded machine may need them to.
	spec := func(s *configs.Spec) {
		s.Training.InnerSteps = 1000
		s.Round = configs.RoundSpec{DeadlineMin: 3, DeadlineMax: 6}
		s.Agreement.RepairDepth = 6
	}
	swarm, _, boot := startSwarmWith(t, ctx, 6, spec, func(i int, o *Options) {
		if i == 0 {
			o.gater = gate
			if os.Getenv("LOWBAND_TEST_LOG") != "" {
				o.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
			}
		}
	})
	cut, others := swarm[0], swarm[1:]
	poll := func(what string, cond func() bool) {
		t.Helper()
		if err := p2ptest.Poll(ctx, what, 50*time.Millisecond, cond); err != nil {
			for _, n := range swarm {
				h, _ := head(n)
				t.Logf("%s: head %d, agreement %+v", n.ID(), h, n.train.loop.Agreement())
			}
			t.Fatal(err)
		}
	}
	poll("every node closing round 2", func() bool { return lowHead(swarm) >= 2 })

	gate.Cut(cut.host)
	start := medianHead(others)
	t.Logf("%s: cut off after round %d", time.Now().Format("15:04:05.000"), start)
	// Its shards of the round or two after start may have gone out before the cut: wait
	// for 2 rounds that most others closed without it.
	var missed []uint64
	poll("the others closing 2 rounds without it", func() bool {
		missed = missed[:0]
		for r := start + 1; r <= medianHead(others); r++ {
			if without(t, others, r, cut.ID().String()) {
				missed = append(missed, r)
			}
		}
		return len(missed) >= 2
	})
	gate.Restore()
	alone, _ := head(cut) // the last round it closed while cut off
	restored := medianHead(others)
	reconnect(t, ctx, cut, append([]*Node{boot}, others...)...)
	t.Logf("%s: let back; the others closed rounds %d to %d, %v without it; it closed up to %d", time.Now().Format("15:04:05.000"), start+1, restored, missed, alone)

	// Within 2 rounds: before it and most others close round restored+3, the node holds
	// the root most of them hold for the last round both closed, from restored on. The
	// rounds are the node's as much as the others': on a loaded machine the others close a
	// round in about a second while the node, which has the rounds it missed to close again,
	// lags one behind. However loaded, the others closing restored+7 without it back ends
	// the wait.
	var at uint64
	poll("the cut node back on the others' root", func() bool {
		f := medianHead(others)
		h, _ := head(cut)
		if m := min(h, f); m >= restored {
			if want := majorityRoot(t, others, m); want != nil && bytes.Equal(storedRoot(t, cut, m), want) {
				at = m
				return true
			}
		}
		if min(h, f) > restored+2 || f > restored+6 {
			for _, n := range swarm {
				h, _ := head(n)
				t.Logf("%s %s: head %d", time.Now().Format("15:04:05.000"), n.ID(), h)
			}
			for _, l := range strings.Split(string(get(t, "http://"+cut.APIAddr()+"/metrics")), "\n") {
				if strings.HasPrefix(l, "lowband_node_gossip") && !strings.HasSuffix(l, " 0") || strings.HasPrefix(l, "lowband_agreement") {
					t.Log(l)
				}
			}
			t.Fatalf("the others closed rounds %d to %d since the node was let back, it closed up to %d, and it does not hold their root: agreement %+v, last resync %+v",
				restored+1, f, h, cut.train.loop.Agreement(), cut.lastResync.Load())
		}
		return false
	})
	a := cut.train.loop.Agreement()
	t.Logf("%s: back on the others' root at round %d (let back after round %d); agreement %+v", time.Now().Format("15:04:05.000"), at, restored, a)
	// A missed round it closed alone (its list short of the others' contributions) must be
	// repaired; one it closed only after it was let back it settles at its close, with the
	// others' records already in (no repair).
	closedAlone := alone >= missed[0]
	if rs := cut.lastResync.Load(); rs != nil {
		t.Errorf("the node resynced (%+v): a repair in its window should have brought it back", *rs)
	}
	if closedAlone && a.Repairs == 0 {
		t.Errorf("the node closed round %d alone and holds the others' root without having repaired a round", alone)
	}
	for _, r := range missed {
		if want, got := majorityRoot(t, others, r), storedRoot(t, cut, r); !bytes.Equal(got, want) {
			t.Errorf("stored root of round %d, closed while cut off, is %x; most others hold %x", r, got, want)
		}
	}
	metrics := string(get(t, "http://"+cut.APIAddr()+"/metrics"))
	if closedAlone && (!strings.Contains(metrics, "lowband_agreement_repairs_total ") || strings.Contains(metrics, "lowband_agreement_repairs_total 0\n")) {
		t.Error("metrics count no repair")
	}
}
