package core_test

import (
	"slices"
	"testing"

	"github.com/lowband/lowband/node/core"
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
