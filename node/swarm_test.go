package node

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/p2p/p2ptest"
)

// swarmSpec is a generated local network spec for an in-process swarm: the synthetic task
// with H = 10 and a fast inner step, sim attestation (the devnet's), and equal genesis
// stakes for the given peers.
func swarmSpec(t *testing.T, peers []string) *configs.Spec {
	t.Helper()
	stakes := map[string]uint64{}
	for _, p := range peers {
		stakes[p] = 100
	}
	s := syntheticSpec(t, stakes)
	s.Training.InnerSteps = 10
	s.Training.Inner = configs.InnerOptSpec{LR: 0.01, MinLR: 0.001, TotalSteps: 1000, Clip: 1, WeightDecay: 0.01}
	s.Round = configs.RoundSpec{DeadlineMin: 10, DeadlineMax: 30}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	return s
}

// startSwarm starts a bootstrap node and n training nodes on loopback, each with its own
// home, on one generated spec; it stops them when the test ends.
func startSwarm(t *testing.T, ctx context.Context, n int) []*Node {
	nodes, _, _ := startSwarmAt(t, ctx, n)
	return nodes
}

// startSwarmAt is startSwarm, also returning the spec and the bootstrap node.
func startSwarmAt(t *testing.T, ctx context.Context, n int) ([]*Node, *configs.Spec, *Node) {
	t.Helper()
	return startSwarmWith(t, ctx, n, nil, nil)
}

// startSwarmWith is startSwarmAt with the swarm's spec edited by spec and each training
// node's options by opts (i from 0), when not nil.
func startSwarmWith(t *testing.T, ctx context.Context, n int, spec func(*configs.Spec), opts func(i int, o *Options)) ([]*Node, *configs.Spec, *Node) {
	t.Helper()
	homes := make([]configs.Home, n)
	cfgs := make([]*configs.Config, n)
	ids := make([]string, n)
	for i := range homes {
		homes[i], cfgs[i], _ = newHome(t)
		key, err := homes[i].LoadIdentity()
		if err != nil {
			t.Fatal(err)
		}
		id, err := peer.IDFromPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id.String()
	}
	s := swarmSpec(t, ids)
	if spec != nil {
		spec(s)
		if err := s.Validate(); err != nil {
			t.Fatal(err)
		}
	}
	bh, bc, _ := newHome(t)
	boot := runNode(t, ctx, Options{Home: bh, Config: bc, Spec: s, Role: configs.RoleBootstrap})
	maddr := fmt.Sprintf("%s/p2p/%s", boot.host.Addrs()[0], boot.ID())
	nodes := make([]*Node, n)
	for i := range nodes {
		cfgs[i].P2P.Bootstrap = []string{maddr}
		o := Options{Home: homes[i], Config: cfgs[i], Spec: s}
		if os.Getenv("LOWBAND_TEST_LOG_ALL") != "" {
			o.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})).With("node", i)
		}
		if opts != nil {
			opts(i, &o)
		}
		nodes[i] = runNode(t, ctx, o)
	}
	return nodes, s, boot
}

// runNode starts a node and runs it until the test ends.
func runNode(t *testing.T, ctx context.Context, o Options) *Node {
	t.Helper()
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	n, err := New(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("node %s: %v", n.ID(), err)
		}
	})
	return n
}

// TestSwarmTrainsToOneRoot: six nodes and a bootstrap node on loopback train the synthetic
// task over gossip until the held-out loss has clearly fallen, and every node holds the same
// state root and ledger root after the same round, with every node included every round.
// scoredRounds waits until every node of swarm has closed and scored its first rounds.
func scoredRounds(ctx context.Context, swarm []*Node, rounds int) error {
	return p2ptest.Poll(ctx, "every node closing the rounds", 50*time.Millisecond, func() bool {
		for _, n := range swarm {
			st := n.trainingStatus()
			if len(st.Rounds) < rounds || st.Rounds[rounds-1].Loss == nil {
				return false
			}
		}
		return true
	})
}

func TestSwarmTrainsToOneRoot(t *testing.T) {
	const nodes, rounds = 6, 12
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	swarm := startSwarm(t, ctx, nodes)
	if err := scoredRounds(ctx, swarm, rounds); err != nil {
		for _, n := range swarm {
			st := n.trainingStatus()
			t.Logf("%s: next round %d, %d rounds closed", n.ID(), st.NextRound, len(st.Rounds))
		}
		t.Fatal(err)
	}
	want := swarm[0].trainingStatus()
	last := want.Rounds[rounds-1]
	for _, n := range swarm {
		st := n.trainingStatus()
		r := st.Rounds[rounds-1]
		t.Logf("%s: loss %.4f -> %.4f, state root %.16s, ledger root %.16s", n.ID(), *st.InitialLoss, *r.Loss, r.StateRoot, r.LedgerRoot)
		if r.StateRoot != last.StateRoot || r.LedgerRoot != last.LedgerRoot {
			t.Errorf("%s: round %d roots %s %s, want %s %s", n.ID(), r.Round, r.StateRoot, r.LedgerRoot, last.StateRoot, last.LedgerRoot)
		}
		if !(*r.Loss < 0.8**st.InitialLoss) {
			t.Errorf("%s: held-out loss %.4f -> %.4f after %d rounds", n.ID(), *st.InitialLoss, *r.Loss, rounds)
		}
		for _, rr := range st.Rounds[:rounds] {
			if len(rr.Included) != nodes {
				t.Errorf("%s: round %d included %d contributions, rejected %v", n.ID(), rr.Round, len(rr.Included), rr.Rejected)
				t.Logf("included %v", rr.Included)
				for _, l := range strings.Split(string(get(t, "http://"+n.APIAddr()+"/metrics")), "\n") {
					if strings.HasPrefix(l, "lowband_node_gossip") {
						t.Log(l)
					}
				}
				break
			}
		}
	}
}

// With the recipe's outer.merge, a node closes a round while its next round's local work
// runs and moves that work to θ after it: the nodes end every round on one root, the
// loss falls, and rounds did merge (each inner step here takes a few milliseconds, so the
// others' contributions come during the work).
func TestSwarmMergeTrainsToOneRoot(t *testing.T) {
	const nodes, rounds = 4, 10
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	swarm, _, _ := startSwarmWith(t, ctx, nodes, func(s *configs.Spec) { s.Training.Outer.Merge, s.Agreement.CheckpointEvery = true, 2 },
		func(_ int, o *Options) {
			o.Compute = func() func() {
				time.Sleep(3 * time.Millisecond)
				return func() {}
			}
		})
	if err := scoredRounds(ctx, swarm, rounds); err != nil {
		t.Fatal(err)
	}
	last := swarm[0].trainingStatus().Rounds[rounds-1]
	merged := int64(0)
	for _, n := range swarm {
		st := n.trainingStatus()
		r := st.Rounds[rounds-1]
		t.Logf("%s: loss %.4f -> %.4f, %d rounds merged, state root %.16s", n.ID(), *st.InitialLoss, *r.Loss, st.MergedRounds, r.StateRoot)
		if r.StateRoot != last.StateRoot || r.LedgerRoot != last.LedgerRoot {
			t.Errorf("%s: round %d roots %s %s, want %s %s", n.ID(), r.Round, r.StateRoot, r.LedgerRoot, last.StateRoot, last.LedgerRoot)
		}
		if !(*r.Loss < 0.8**st.InitialLoss) {
			t.Errorf("%s: held-out loss %.4f -> %.4f after %d rounds", n.ID(), *st.InitialLoss, *r.Loss, rounds)
		}
		merged += st.MergedRounds
		// A commit during local work saves the local state once the work ends: the last
		// one saved is recent, though about half of the commits come during the work.
		saved, _, ok, err := n.ledger.st.Local()
		if err != nil || !ok || saved+4 < uint64(rounds) {
			t.Errorf("%s: local state last saved at round %d (%v, %v), want at least %d", n.ID(), saved, ok, err, rounds-4)
		}
	}
	if merged < nodes {
		t.Errorf("%d rounds merged over %d nodes and %d rounds: the closes did not come during the work", merged, nodes, rounds)
	}
}
