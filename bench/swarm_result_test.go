package bench

import (
	"testing"

	"github.com/lowband/lowband/node"
)

// TestSwarmAdversaryCounts: from hand-made statuses, an equivocator slashed by both honest
// nodes counts as slashed correctly, its aggregates before and after the round it
// equivocates in are not bad and the one of that round is, one filtered out whole is not
// aggregated, and an honest peer slashed by one honest node counts once.
func TestSwarmAdversaryCounts(t *testing.T) {
	from := node.EquivocatesIn()
	rounds := func(included ...[]string) []node.RoundStatus {
		out := make([]node.RoundStatus, len(included))
		for i, in := range included {
			out[i] = node.RoundStatus{Round: uint64(i), Included: in}
		}
		return out
	}
	before, after := make([][]string, from+2), make([][]string, from+2)
	before[0] = []string{"eq", "h1"}
	after[from] = []string{"eq"}
	nodes := []swarmNode{
		{peer: "eq", adversary: node.AdvEquivocate, st: &node.TrainingStatus{}},
		{peer: "flip", adversary: node.AdvSignFlip, st: &node.TrainingStatus{}},
		{peer: "h1", st: &node.TrainingStatus{Slashed: []string{"eq"}, Rounds: rounds(before...)}},
		{peer: "h2", st: &node.TrainingStatus{Slashed: []string{"eq", "h1"}, Rounds: rounds(after...)}},
	}
	// Listed but left out whole by the aggregation rule: not aggregated.
	nodes[3].st.Rounds[from+1].Included, nodes[3].st.Rounds[from+1].Filtered = []string{"eq"}, []string{"eq"}
	// After the round it equivocated in, its contributions are valid until it is jailed.
	nodes[2].st.Rounds[from+1].Included = []string{"eq"}
	res := &SwarmResult{Nodes: 4, Rounds: int(from) + 2}
	fillSwarm(res, nodes, 1)
	if res.SlashedCorrectly == nil || *res.SlashedCorrectly != 1 || *res.HonestSlashed != 1 || *res.BadAggregated != 1 {
		t.Fatalf("slashed correctly %v, honest slashed %v, bad aggregated %v; want 1, 1, 1", res.SlashedCorrectly, res.HonestSlashed, res.BadAggregated)
	}
	if a := res.Adversaries[0]; a.SlashedBy != 2 || a.Aggregated != 3 {
		t.Errorf("equivocator slashed by %d, aggregated %d times; want 2, 3", a.SlashedBy, a.Aggregated)
	}
	if a := res.Adversaries[1]; a.SlashedBy != 0 || a.Aggregated != 0 {
		t.Errorf("sign-flipper slashed by %d, aggregated %d times; want 0, 0", a.SlashedBy, a.Aggregated)
	}
}

// TestSwarmWireAfterRoundZero: the wire figure after round 0 leaves out round 0 (the
// forming) and counts the later rounds of every honest node; the figure of the whole run
// counts them all.
func TestSwarmWireAfterRoundZero(t *testing.T) {
	sent := func(bytes ...int64) *node.TrainingStatus {
		st := &node.TrainingStatus{}
		for i, b := range bytes {
			st.Rounds = append(st.Rounds, node.RoundStatus{Round: uint64(i), WireBytesSent: b})
		}
		return st
	}
	nodes := []swarmNode{
		{peer: "a", st: sent(9000, 100, 300, 7)}, // round 3 is past the measured rounds
		{peer: "b", st: sent(5000, 200, 400)},
	}
	res := &SwarmResult{Nodes: 2, Rounds: 3}
	fillSwarm(res, nodes, 1)
	if res.WireBytesPerNodeRound != 15000.0/6 || res.WireBytesPerNodeRoundFormed != 1000.0/4 {
		t.Fatalf("wire %v, after round 0 %v; want %v and %v", res.WireBytesPerNodeRound, res.WireBytesPerNodeRoundFormed, 15000.0/6, 1000.0/4)
	}
	res = &SwarmResult{Nodes: 2, Rounds: 1}
	if fillSwarm(res, nodes, 1); res.WireBytesPerNodeRoundFormed != 0 {
		t.Fatalf("one round: after round 0 %v, want none", res.WireBytesPerNodeRoundFormed)
	}
}
