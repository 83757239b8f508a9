package core_test

import (
	"slices"
	"testing"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/node/core"
	"github.com/lowband/lowband/training"
	"github.com/lowband/lowband/training/aggregate"
	"github.com/lowband/lowband/training/round"
	"github.com/lowband/lowband/verify"
)

// equivocate makes x publish, next to its first shard of round 0, a second one for the same
// slot with another payload, signed with the same key.
func equivocate(s *swarm, x *node) {
	x.tamper = func(m core.Message) []core.Message {
		out := []core.Message{m}
		sh, err := verify.UnmarshalShard(m.Data, maxPayload)
		if err != nil || sh.Header.Round != 0 || sh.Header.Index != 0 {
			return out
		}
		other, err := verify.SignShard(s.fx.Key(x.name), sh.Header, append([]byte("other "), sh.Payload...))
		if err != nil {
			s.t.Fatal(err)
		}
		data, err := other.Marshal()
		if err != nil {
			s.t.Fatal(err)
		}
		return append(out, core.Message{Kind: core.KindShards, Data: data})
	}
}

// A peer that signs two shards for one slot loses its contribution to the round on every
// core, which publish the evidence; the next record slashes and jails it on every ledger,
// and the round after, its contribution is left out as jailed. What was aggregated is
// exactly the honest contributions.
func TestEquivocationSlashedEverywhere(t *testing.T) {
	s := newSwarm(t, 3, ledgerParams(), []string{"a", "b", "c", "x"}, []uint64{100, 100, 100, 100})
	x := s.node("x")
	equivocate(s, x)
	honest := []*node{s.node("a"), s.node("b"), s.node("c")}
	s.start()
	s.step(everyone)
	s.step(everyone)
	s.tick(t0.Add(deadlineConfig.Max)) // x's contribution is dropped: no round closes on "all"
	last := sameRoots(t, honest)
	if last.Round != 0 || !slices.Equal(last.Included, ids(honest...)) {
		t.Fatalf("round %d included %v", last.Round, last.Included)
	}
	if last.Evidence != 1 || last.Rejected[core.ReasonEquivocation] != 1 {
		t.Fatalf("evidence %d, rejected %v", last.Evidence, last.Rejected)
	}
	for _, n := range honest {
		l := n.core.Ledger()
		if !l.Jailed(x.id) || l.Stake(x.id) != 50 {
			t.Fatalf("%s: x jailed %v, stake %d; want jailed, 50", n.name, l.Jailed(x.id), l.Stake(x.id))
		}
		want := s.reference(n, map[string]float64{s.node("a").id: 1, s.node("b").id: 1, s.node("c").id: 1})
		if n.sums[0].ModelRoot != want {
			t.Fatalf("%s aggregated something else than the honest contributions of round 0", n.name)
		}
	}
	s.step(everyone) // round 1 closes: x, jailed, sent its shards in time but is left out
	last = sameRoots(t, honest)
	if last.Round != 1 || !slices.Equal(last.Included, ids(honest...)) || last.Rejected[core.ReasonJailed] != 1 {
		t.Fatalf("round %d included %v, rejected %v", last.Round, last.Included, last.Rejected)
	}
	if last.Evidence != 0 {
		t.Fatalf("the offence was penalised again: %d evidence items", last.Evidence)
	}
}

// A peer without stake counts at the network's unstaked weight: here half of a staked
// peer's, exactly as a machine given those weights computes.
func TestUnstakedPeerCountsAtUnstakedWeight(t *testing.T) {
	s := newSwarm(t, 4, ledgerParams(), four, []uint64{100, 100, 100, 0})
	s.start()
	s.step(everyone)
	s.step(everyone)
	s.tick(t0.Add(deadlineConfig.Max))
	all := s.nodes
	last := sameRoots(t, all)
	if last.Round != 0 || !slices.Equal(last.Included, ids(all...)) {
		t.Fatalf("round %d included %v", last.Round, last.Included)
	}
	a, b, c, d := s.node("a").id, s.node("b").id, s.node("c").id, s.node("d").id
	for _, n := range all {
		want := s.reference(n, map[string]float64{a: 1, b: 1, c: 1, d: 0.5})
		if n.sums[0].ModelRoot != want {
			t.Fatalf("%s did not weigh the unstaked peer at one half", n.name)
		}
	}
	if got := s.node("a").core.Ledger().Balance(d); got != 5 {
		t.Fatalf("unstaked peer earned %d, want 5", got)
	}
}

// With an unstaked weight of 0 an unstaked peer's contribution is left out.
func TestUnstakedPeerLeftOutAtZeroWeight(t *testing.T) {
	p := ledgerParams()
	p.UnstakedWeightPPM = 0
	s := newSwarm(t, 5, p, four, []uint64{100, 100, 100, 0})
	s.start()
	s.step(everyone)
	s.step(everyone) // the staked three are all the power there is: round 0 closes on them
	staked := []*node{s.node("a"), s.node("b"), s.node("c")}
	last := sameRoots(t, staked)
	if !slices.Equal(last.Included, ids(staked...)) {
		t.Fatalf("included %v", last.Included)
	}
	if last.Rejected[core.ReasonWeight] != 1 {
		t.Fatalf("rejected %v, want one for weight", last.Rejected)
	}
}

// signFlip makes x's local work the sign-flipped step an honest node takes, k times as
// large: its pseudo-gradient is -k times an honest one.
func signFlip(x *node, k float64) {
	x.work = func(st *round.Start) []training.Tensor {
		out := local(x.name, st)
		for i, t := range out {
			for j, v := range t.Data {
				t.Data[j] = st.Params[i].Data[j] + k*(st.Params[i].Data[j]-v)
			}
		}
		return out
	}
}

// Under filtered_mean a sign-flipped, scaled contribution is aggregated as an input of the
// rule, left out whole, and earns nothing, on every core alike: each record lists it
// marked Dropped, each summary counts it "filtered", the ledgers give it no reward and no
// contribution while the honest peers earn every round, and every core holds one root.
func TestFilteredContributionEarnsNothingEverywhere(t *testing.T) {
	filtered := func(rc *round.Config) { rc.Aggregate = aggregate.Config{Method: aggregate.FilteredMean} }
	s := newSwarmEdit(t, 11, ledgerParams(), []string{"a", "b", "c", "d", "x"}, []uint64{100, 100, 100, 100, 100}, nil, filtered)
	x := s.node("x")
	signFlip(x, 5)
	s.start()
	for range 4 {
		s.step(everyone)
	}
	last := sameRoots(t, s.nodes)
	if last.Round != 2 {
		t.Fatalf("closed up to round %d, want 2", last.Round)
	}
	honest := []*node{s.node("a"), s.node("b"), s.node("c"), s.node("d")}
	for _, n := range s.nodes {
		for i, sum := range n.sums {
			rec := n.commits[i].Record
			if !slices.Equal(sum.Included, ids(s.nodes...)) || sum.Rejected[core.ReasonFiltered] != 1 {
				t.Fatalf("%s, round %d: included %v, rejected %v", n.name, sum.Round, sum.Included, sum.Rejected)
			}
			for _, e := range rec.Contributions {
				if e.Dropped != (e.Peer == x.id) {
					t.Fatalf("%s, round %d: %s listed with Dropped %v", n.name, rec.Round, e.Peer, e.Dropped)
				}
			}
			if !slices.ContainsFunc(n.commits[i].Events, func(e incentives.Event) bool {
				return e.Kind == incentives.EventFiltered && e.Peer == x.id
			}) {
				t.Fatalf("%s, round %d: no filtered event for x", n.name, rec.Round)
			}
		}
		l := n.core.Ledger()
		if l.Balance(x.id) != 0 || l.Account(x.id).Contributions != 0 {
			t.Fatalf("%s: x earned %d for %d contributions", n.name, l.Balance(x.id), l.Account(x.id).Contributions)
		}
		for _, h := range honest {
			if l.Balance(h.id) != 30 || l.Account(h.id).Contributions != 3 {
				t.Fatalf("%s: %s earned %d for %d contributions, want 30 for 3", n.name, h.name, l.Balance(h.id), l.Account(h.id).Contributions)
			}
		}
	}
}

// A core that closed a round without the filtered contribution and repairs it to the
// majority's list finds the same flag: its repaired record marks the contribution Dropped
// and its ledger, like the others', gives it nothing.
func TestRepairMarksTheFilteredContributionAlike(t *testing.T) {
	filtered := func(rc *round.Config) { rc.Aggregate = aggregate.Config{Method: aggregate.FilteredMean} }
	s := newSwarmEdit(t, 12, ledgerParams(), []string{"a", "b", "c", "d", "x"}, []uint64{100, 100, 100, 100, 100}, nil, filtered)
	x, a := s.node("x"), s.node("a")
	signFlip(x, 5)
	s.drop = dropShards(0, x, a)
	closeRound0(s)
	agreeAll(t, s.nodes)
	if len(a.repairs) == 0 {
		t.Fatal("a did not repair round 0")
	}
	rp := a.repairs[len(a.repairs)-1]
	rec := rp.Commits[0].Record
	if rec.Round != 0 || !slices.ContainsFunc(rec.Contributions, func(e incentives.Contribution) bool { return e.Peer == x.id && e.Dropped }) {
		t.Fatalf("a's repaired record of round %d: %+v", rec.Round, rec.Contributions)
	}
	for _, n := range s.nodes {
		if l := n.core.Ledger(); l.Balance(x.id) != 0 || l.Balance(a.id) != 10 {
			t.Fatalf("%s: x earned %d, a %d", n.name, l.Balance(x.id), l.Balance(a.id))
		}
	}
}
