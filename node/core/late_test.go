package core_test

import (
	"slices"
	"testing"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/node/core"
	"github.com/lowband/lowband/verify"
)

// TestSlowUnstakedNodeStaysInStep: three staked nodes and z, without stake, whose local
// work takes two of the others' rounds. Nobody waits for z, so its work for a round ends
// after the others closed it; z drops that work (Ready.Late), closes the rounds with the
// others' contributions and starts on the next, and so stays within Depth+1 rounds of
// them, on their roots, without a repair. Before, z finished every round's work, fell
// behind by one round every two (11 rounds after 24 of theirs) and, out of their records'
// window, could only have resynced.
func TestSlowUnstakedNodeStaysInStep(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		s, a, z := slowZ(t, seed, 24, func(step int) bool { return step%2 == 0 })
		av, zv := a.core.View(), z.core.View()
		if lag := av.NextClose - zv.NextClose; lag > core.DefaultDepth+1 {
			t.Fatalf("seed %d: z closed up to round %d, the others up to %d", seed, zv.NextClose, av.NextClose)
		}
		if len(z.late) < 8 || len(z.repairs) > 0 {
			t.Fatalf("seed %d: z dropped the work of rounds %v and repaired %d times", seed, z.late, len(z.repairs))
		}
		for r := uint64(0); r < zv.NextClose; r++ {
			if got, want := rootAt(z, r), rootAt(a, r); got != want {
				t.Fatalf("seed %d: round %d: z holds root %x, a %x", seed, r, got[:4], want[:4])
			}
		}
		// What z dropped it never signed: none of its shards is of a dropped round.
		for _, data := range s.shards[z.id] {
			sh, err := verify.UnmarshalShard(data, maxPayload)
			if err != nil {
				t.Fatal(err)
			}
			if slices.Contains(z.late, sh.Header.Round) {
				t.Fatalf("seed %d: z signed a shard of round %d, whose work it dropped", seed, sh.Header.Round)
			}
		}
	}
}

// TestNodeInStepDropsNothing: nodes that keep pace drop no local work, staked or not, and
// the node without stake is in every list.
func TestNodeInStepDropsNothing(t *testing.T) {
	s := newSwarm(t, 4, ledgerParams(), []string{"a", "b", "c", "z"}, []uint64{100, 100, 100, 0})
	s.start()
	for range 12 {
		s.step(everyone)
	}
	for _, n := range s.nodes {
		if len(n.late) > 0 {
			t.Fatalf("%s dropped the work of rounds %v", n.name, n.late)
		}
	}
	if k := countIncluded(s.node("a"), s.node("z").id); k < 10 {
		t.Fatalf("z included in %d of a's rounds", k)
	}
}

// slowZ runs steps steps of a swarm of three staked nodes and z, without stake, which does
// its local work only in the steps works says; z's fetches of shard slots are answered.
func slowZ(t *testing.T, seed uint64, steps int, works func(step int) bool) (*swarm, *node, *node) {
	t.Helper()
	s := newSwarm(t, seed, ledgerParams(), []string{"a", "b", "c", "z"}, []uint64{100, 100, 100, 0})
	z := s.node("z")
	s.start()
	for step := range steps {
		s.step(func(n *node) bool { return n != z || works(step) })
		serveSlots(s, z)
		s.flush()
	}
	return s, s.node("a"), z
}

// serveSlots answers n's fetches of shard slots (round, peer, index) with the shard its
// peer published, as peers do; the swarm itself answers only fetches by CID.
func serveSlots(s *swarm, n *node) {
	wants := n.fetch
	n.fetch = nil
	for _, w := range wants {
		if w.CID != nil {
			continue
		}
		for _, data := range s.shards[w.Peer] {
			sh, err := verify.UnmarshalShard(data, maxPayload)
			if err != nil {
				s.t.Fatal(err)
			}
			if sh.Header.Round == w.Round && sh.Header.Index == w.Index {
				s.send(delivery{from: s.node("a"), to: n, msg: core.Message{Kind: core.KindShards, Data: data}, fetch: true})
			}
		}
	}
}

// countIncluded is how many of n's closed rounds included id.
func countIncluded(n *node, id string) int {
	k := 0
	for _, s := range n.sums {
		if slices.Contains(s.Included, id) {
			k++
		}
	}
	return k
}

// TestRecordEquivocationOfAKeyWithoutAVoteKeepsNothing: evidence that a key with no vote
// signed two records of a round (anyone can make such evidence with a fresh key, for any
// round the window holds, which is wider now) leaves no trace in the agreement: no
// signer marked, nothing kept for the round.
func TestRecordEquivocationOfAKeyWithoutAVoteKeepsNothing(t *testing.T) {
	s := newSwarm(t, 5, ledgerParams(), four, []uint64{100, 100, 100, 100})
	a := s.node("a")
	closeRound0(s)
	sr1, _ := forge(t, "nobody", a.commits[0].Record, func(*incentives.Record) {})
	sr2, _ := forge(t, "nobody", a.commits[0].Record, func(r *incentives.Record) { r.Contributions = nil })
	ev, err := incentives.NewRecordEquivocation(sr1, sr2)
	if err != nil {
		t.Fatal(err)
	}
	s.deliver(delivery{to: a, msg: core.Message{Kind: core.KindEvidence, Data: ev.Marshal()}})
	if n := a.core.Agreement().Equivocations; n != 0 {
		t.Fatalf("evidence against a key without a vote counted %d equivocations", n)
	}
}

// TestSlowSpellThenInStepContributesAgain: z, without stake, is slow for its first six
// rounds (its work takes two of the others') and then as fast as they are. It falls a
// round behind and comes back in step: from then on its contributions reach the others
// before they close, and are in most of their lists. Without realigning its starts (only
// dropping work the others had closed) it stayed a round behind, each contribution after
// their close, in 2 to 5 of 30 lists.
func TestSlowSpellThenInStepContributesAgain(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		_, a, z := slowZ(t, seed, 36, func(step int) bool { return step >= 6 || step%2 == 0 })
		if k := countIncluded(a, z.id); k < 20 {
			t.Fatalf("seed %d: z in %d of a's %d lists (dropped the work of rounds %v)", seed, k, len(a.sums), z.late)
		}
		if lag := a.core.View().NextClose - z.core.View().NextClose; lag > 1 || len(z.repairs) > 1 {
			t.Fatalf("seed %d: z %d rounds behind, %d repairs", seed, lag, len(z.repairs))
		}
		for r := uint64(0); r < z.core.View().NextClose; r++ {
			if got, want := rootAt(z, r), rootAt(a, r); got != want {
				t.Fatalf("seed %d: round %d: z holds root %x, a %x", seed, r, got[:4], want[:4])
			}
		}
	}
}
