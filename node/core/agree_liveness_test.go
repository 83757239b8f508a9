package core_test

import (
	"testing"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
)

// offlineMajority is four nodes of 100 each and x, staked 500 and never online: the
// online nodes hold 400 of 900, less than half of the voting power, so no round's records
// reach a quorum.
func offlineMajority(t *testing.T, seed uint64) *swarm {
	t.Helper()
	x := incentivestest.PeerID("x")
	return newSwarmWith(t, seed, ledgerParams(), four, []uint64{100, 100, 100, 100}, []incentives.Stake{{Peer: x, Amount: 500}})
}

// closeFour closes rounds 0 to 3, each at the deadline.
func closeFour(s *swarm) {
	closeRound0(s)
	for range 3 {
		s.step(everyone)
		s.tick(s.now.Add(deadlineConfig.Max))
	}
}

// With more than half of the power offline, nodes that hold the same shards close every
// round with the same list, each on its own: they end on one root, and none reports a
// canonical round.
func TestAgreementOfflineMajorityNodesWithTheSameShardsEndOnOneRoot(t *testing.T) {
	s := offlineMajority(t, 11)
	closeFour(s)
	ref := s.nodes[0].core.Agreement()
	for _, n := range s.nodes {
		a := n.core.Agreement()
		if a.Head != 3 || a.Root != ref.Root {
			t.Fatalf("%s holds round %d root %x, %s round %d root %x", n.name, a.Head, a.Root[:4], s.nodes[0].name, ref.Head, ref.Root[:4])
		}
		if a.CanonicalRound != 0 || a.Canonical != [32]byte{} {
			t.Fatalf("%s reports round %d canonical without a quorum", n.name, a.CanonicalRound)
		}
	}
}

// With more than half of the power offline, a node that missed a contribution to round 0
// closes it without it and stays apart: the other three's records list it but carry 300
// of 900, no quorum, so nobody repairs, and its root differs from theirs in every later
// round.
func TestAgreementOfflineMajorityNodeThatMissedAShardStaysApart(t *testing.T) {
	s := offlineMajority(t, 12)
	a, b, c := s.node("a"), s.node("b"), s.node("c")
	s.drop = dropShards(0, a, c)
	closeFour(s)
	if got := len(lastRecord(c, 0).Contributions); got != 3 {
		t.Fatalf("c holds round 0 listing %d contributions, want 3 (a's missed)", got)
	}
	ref := b.core.Agreement()
	for _, n := range s.nodes {
		ag := n.core.Agreement()
		if ag.Repairs != 0 || ag.CanonicalRound != 0 {
			t.Fatalf("%s repaired %d rounds, canonical round %d: want none without a quorum", n.name, ag.Repairs, ag.CanonicalRound)
		}
		if apart := ag.Root != ref.Root; apart != (n == c) || ag.Head != 3 {
			t.Fatalf("%s holds round %d root %x, b %x: want only c apart", n.name, ag.Head, ag.Root[:4], ref.Root[:4])
		}
	}
}
