package core_test

import (
	"errors"
	"slices"
	"testing"

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
	// Round 1's local work ended at t0+1s, but round 1 could not close before round 0 did
	// (t0+Max): its deadline counts from there, not from its local work, so that a node
	// whose work is ahead of its peers' still gives them the whole deadline. The next step
	// (local work of round 2 at t0+Max) does not close it; t0+2·Max does.
	s.step(everyone)
	if last := s.node("a").sums[len(s.node("a").sums)-1]; last.Round != 0 {
		t.Fatalf("round %d closed less than Max after round 0", last.Round)
	}
	s.tick(t0.Add(2*deadlineConfig.Max - 1))
	if last := s.node("a").sums[len(s.node("a").sums)-1]; last.Round != 0 {
		t.Fatalf("round %d closed less than Max after round 0", last.Round)
	}
	s.tick(t0.Add(2 * deadlineConfig.Max))
	last = sameRoots(t, live)
	if last.Round != 1 || last.Deadline != deadlineConfig.Max || last.Stall != deadlineConfig.Max {
		t.Fatalf("training did not go on: last closed round %d, deadline %v, stall %v", last.Round, last.Deadline, last.Stall)
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
