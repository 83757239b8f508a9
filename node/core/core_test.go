package core_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
	"github.com/lowband/lowband/node/core"
	"github.com/lowband/lowband/training/round"
)

var four = []string{"a", "b", "c", "d"}

// runSwarm trains rounds rounds of four staked nodes, delivering in the order seed picks.
func runSwarm(t *testing.T, seed uint64, rounds int) *swarm {
	s := newSwarm(t, seed, ledgerParams(), four, []uint64{100, 100, 100, 100})
	s.start()
	for range rounds {
		s.step(everyone)
	}
	return s
}

// Four cores exchanging their messages in random orders close every round with all four
// contributions and agree on the model, state and ledger roots, whatever the order.
func TestSwarmAgreesInAnyDeliveryOrder(t *testing.T) {
	const rounds = 6
	var first *core.Summary
	for seed := uint64(1); seed <= 3; seed++ {
		s := runSwarm(t, seed, rounds)
		last := sameRoots(t, s.nodes)
		if last.Round != rounds-2 { // with the delay, round r closes after local work of r+1
			t.Fatalf("last closed round %d, want %d", last.Round, rounds-2)
		}
		for _, n := range s.nodes {
			for _, sum := range n.sums {
				if !slices.Equal(sum.Included, ids(s.nodes...)) || len(sum.Rejected) != 0 {
					t.Fatalf("%s round %d: included %v rejected %v", n.name, sum.Round, sum.Included, sum.Rejected)
				}
				if sum.ContributionBytes == 0 || sum.Params == nil || len(sum.Ranks) != 2 {
					t.Fatalf("%s round %d: summary incomplete: %+v", n.name, sum.Round, sum)
				}
			}
			if got := n.core.Ledger().Balance(n.id); got != 10*uint64(rounds-1) {
				t.Fatalf("%s earned %d, want %d", n.name, got, 10*(rounds-1))
			}
		}
		if first == nil {
			first = last
		} else if last.StateRoot != first.StateRoot {
			t.Fatalf("delivery order %d changed the state root", seed)
		}
	}
}

// The records every core signs and publishes are the same record bytes, and each chains to
// the one before.
func TestSwarmRecordsIdentical(t *testing.T) {
	s := runSwarm(t, 9, 4)
	ref := s.records[s.nodes[0].id]
	if len(ref) != 3 {
		t.Fatalf("%d records, want 3", len(ref))
	}
	inner := func(data []byte) string {
		sr, _, err := incentives.DecodeSignedRecord(data)
		if err != nil {
			t.Fatal(err)
		}
		return string(sr.Record)
	}
	for _, n := range s.nodes[1:] {
		for i, rec := range s.records[n.id] {
			if inner(rec) != inner(ref[i]) {
				t.Fatalf("record %d of %s differs", i, n.name)
			}
		}
	}
	var prev []byte
	for i, data := range ref {
		_, rec, err := incentives.DecodeSignedRecord(data)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && string(rec.PrevRoot) != string(prev) {
			t.Fatalf("record %d does not chain", i)
		}
		prev = rec.NewRoot
	}
}

// A peer that goes silent holds no round past the deadline: the others close at Max
// (too few observations for an adaptive one), without it, and keep training.
func TestSilentPeerRoundClosesAtDeadline(t *testing.T) {
	s := newSwarm(t, 2, ledgerParams(), four, []uint64{100, 100, 100, 100})
	s.node("d").silent = true
	s.start()
	s.step(everyone) // round 0's local work
	s.step(everyone) // round 1's: round 0 is closable, but d's contribution is missing
	live := []*node{s.node("a"), s.node("b"), s.node("c")}
	for _, n := range live {
		if len(n.sums) != 0 || n.train != nil {
			t.Fatalf("%s closed round 0 or trains before the deadline", n.name)
		}
		if !slices.ContainsFunc(n.fetch, func(w core.Want) bool { return w.Round == 0 && w.Peer == s.node("d").id && w.CID == nil }) {
			t.Fatalf("%s asked for %v, not d's round 0", n.name, n.fetch)
		}
	}
	s.tick(t0.Add(deadlineConfig.Max - 1))
	if len(s.node("a").sums) != 0 {
		t.Fatal("round 0 closed before the deadline")
	}
	s.tick(t0.Add(deadlineConfig.Max))
	last := sameRoots(t, live)
	if last.Round != 0 || !slices.Equal(last.Included, ids(live...)) {
		t.Fatalf("closed round %d with %v", last.Round, last.Included)
	}
	if last.Deadline != deadlineConfig.Max {
		t.Fatalf("deadline %v, want %v", last.Deadline, deadlineConfig.Max)
	}
	if last.Stall != deadlineConfig.Max-1e9 { // blocked from round 1's local work (t0+1s)
		t.Fatalf("stall %v", last.Stall)
	}
	for _, n := range live {
		if n.train == nil || n.train.Round != 2 {
			t.Fatalf("%s does not train round 2 after the close: %+v", n.name, n.train)
		}
	}
	// Round 1's local work ended at t0+1s, so its deadline is t0+1s+Max: the next step
	// (local work of round 2 at t0+Max, tick at t0+Max+1s) closes it.
	s.step(everyone)
	last = sameRoots(t, live)
	if last.Round != 1 || last.Stall != 1e9 {
		t.Fatalf("training did not go on: last closed round %d, stall %v", last.Round, last.Stall)
	}
}

// Without a signer a node makes no contribution: LocalDone fails and changes nothing.
func TestLocalDoneWithoutSignerRefused(t *testing.T) {
	id := incentivestest.PeerID("a")
	ledger, err := incentives.NewState(ledgerParams(), incentives.Genesis{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := core.New(core.Config{
		Self: id, Network: testNetwork, Run: testRun, Round: roundConfig(id), Deadline: deadlineConfig,
		Checker: incentivestest.New(testNetwork, testRun).Checker(),
	}, round.State{Params: theta0()}, ledger)
	if err != nil {
		t.Fatal(err)
	}
	rd, err := c.Start(t0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.LocalDone(t0, 0, local("a", rd.Train)); !errors.Is(err, core.ErrNoSigner) {
		t.Fatalf("LocalDone without a signer: %v, want ErrNoSigner", err)
	}
	if v := c.View(); v.NextLocal != 0 {
		t.Fatalf("local work moved on to round %d", v.NextLocal)
	}
	fx := incentivestest.New(testNetwork, testRun)
	c.SetSigner(core.Signer{Key: fx.Key("a"), Bundle: fx.Bundle("a", "")})
	if rd, err := c.LocalDone(t0, 0, local("a", rd.Train)); err != nil || len(rd.Publish) == 0 {
		t.Fatalf("LocalDone with a signer: %d messages, %v", len(rd.Publish), err)
	}
	if _, err := c.LocalDone(t0, 0, local("a", rd.Train)); !errors.Is(err, round.ErrOrder) {
		t.Fatalf("second LocalDone for round 0 (would sign its slots again): %v", err)
	}
}

// A node whose local work runs ahead of its peers' gives them the whole deadline for the
// next round from when their contributions to the last one came, not from when its own
// work for the next one ended. a ends its work for rounds 0 and 1 at t0 and t0+1s; b, c
// and d end theirs for round 0 at t0+Max/2 and for round 1 at t0+80s. Counted from a's
// work, round 1's deadline (the maximum: too few observations) passed at t0+1s+Max, and a
// closed it alone while the others had not sent theirs; now it counts from t0+Max/2.
func TestNodeAheadGivesItsPeersTheWholeDeadline(t *testing.T) {
	s := newSwarm(t, 3, ledgerParams(), four, []uint64{100, 100, 100, 100})
	a := s.node("a")
	onlyA := func(n *node) bool { return n == a }
	others := func(n *node) bool { return n != a }
	s.start()
	s.step(onlyA) // a's round 0 at t0
	s.step(onlyA) // a's round 1 at t0+1s
	s.tick(t0.Add(deadlineConfig.Max / 2))
	s.step(others) // their round 0: a closes round 0 with all four
	if len(a.sums) != 1 || len(a.sums[0].Included) != 4 {
		t.Fatalf("a closed %d rounds, want round 0 with all four", len(a.sums))
	}
	s.step(onlyA) // a's round 2: round 1 may close once its deadline allows
	s.tick(t0.Add(deadlineConfig.Max + 2*time.Second))
	if last := a.sums[len(a.sums)-1]; last.Round != 0 {
		t.Fatalf("a closed round %d with %v a Max after its own work, before its peers sent theirs", last.Round, last.Included)
	}
	s.tick(t0.Add(80 * time.Second))
	s.step(others) // their round 1 (and they close round 0)
	if last := a.sums[len(a.sums)-1]; last.Round != 1 || !slices.Equal(last.Included, ids(s.nodes...)) {
		t.Fatalf("a closed round %d with %v, want round 1 with all four", last.Round, last.Included)
	}
	s.step(others) // their round 2: they close round 1
	if last := sameRoots(t, s.nodes); last.Round != 1 {
		t.Fatalf("the nodes' last round is %d, want 1", last.Round)
	}
}

// Only the contributions a round includes, of peers with voting power, move the next
// round's clock: z, without stake, lands its contribution to round 0 just before the
// round closes at its deadline (d is silent), and round 1 still closes a deadline after
// the others' work for it, not a deadline after z's arrival.
func TestUnstakedLateArrivalMovesNoClock(t *testing.T) {
	s := newSwarm(t, 5, ledgerParams(), []string{"a", "b", "c", "d", "z"}, []uint64{100, 100, 100, 100, 0})
	s.node("d").silent = true
	z := s.node("z")
	notZ := func(n *node) bool { return n != z }
	s.start()
	s.step(notZ) // round 0 at t0
	s.step(notZ) // round 1 at t0+1s
	s.tick(t0.Add(deadlineConfig.Max - time.Second))
	s.step(func(n *node) bool { return n == z }) // z's round 0 at t0+Max-1s
	a := s.node("a")
	if len(a.sums) != 1 || a.sums[0].Round != 0 {
		t.Fatalf("a closed %d rounds by t0+Max, want round 0", len(a.sums))
	}
	s.step(notZ) // round 2 at t0+Max: round 1 may close; its deadline passed at t0+1s+Max
	if last := a.sums[len(a.sums)-1]; last.Round != 1 {
		t.Fatalf("round 1 not closed a Max after the others' work for it: z's late arrival moved the clock")
	}
}

// With outer.merge a round may close during the next round's local work, which begins
// while the round's contributions still travel: a missing slot is not fetched then, only
// once that work has ended and the round still waits for it, as without the merge (a fetch
// at the work's start asked for most shards a second time).
func TestMergeFetchesMissingSlotsOnlyAfterTheWork(t *testing.T) {
	s := newSwarmEdit(t, 2, ledgerParams(), four, []uint64{100, 100, 100, 100}, nil, func(c *round.Config) { c.Merge = true })
	s.node("d").silent = true
	s.start()
	s.step(everyone) // round 0's local work; round 1's starts, and round 0 may close during it
	live := []*node{s.node("a"), s.node("b"), s.node("c")}
	for _, n := range live {
		if n.train == nil || n.train.Round != 1 {
			t.Fatalf("%s does not train round 1: %+v", n.name, n.train)
		}
		if len(n.fetch) != 0 {
			t.Fatalf("%s asked for %v during round 1's work", n.name, n.fetch)
		}
	}
	s.step(everyone) // round 1's work ends: round 0 still waits for d
	for _, n := range live {
		if !slices.ContainsFunc(n.fetch, func(w core.Want) bool { return w.Round == 0 && w.Peer == s.node("d").id && w.CID == nil }) {
			t.Fatalf("%s asked for %v after round 1's work, not d's round 0", n.name, n.fetch)
		}
	}
}

// With outer.merge a round may close during the next round's work, but not in the
// LocalDone that publishes the node's own contribution to it, even with every other one in:
// its commit, persisted before the publish, would not find the node's own shards (the
// harness checks every Ready). The next event closes it, and the swarm ends on one root.
func TestMergeNeverCommitsARoundWithItsOwnShards(t *testing.T) {
	s := newSwarmEdit(t, 1, ledgerParams(), four, []uint64{100, 100, 100, 100}, nil, func(c *round.Config) { c.Merge = true })
	s.start()
	s.step(everyone) // round 0's work; round 0 closes during round 1's
	d := s.node("d")
	s.step(func(n *node) bool { return n != d }) // the others' round 1 reaches d before its own
	s.step(func(n *node) bool { return n == d }) // d's round 1: everything else of it is in
	s.step(everyone)
	s.step(everyone)
	if last := sameRoots(t, s.nodes); last.Round < 2 {
		t.Fatalf("last closed round %d", last.Round)
	}
}
