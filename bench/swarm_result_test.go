package bench

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/lowband/lowband/node"
)

// TestSwarmAdversaryCounts: from hand-made statuses, an equivocator slashed by both honest
// nodes counts as slashed correctly, and its aggregates, in the round it equivocates in
// too, are not bad (the list vote picks one of its two valid versions alike everywhere);
// a nan contribution aggregated is bad, one filtered out whole is not aggregated, and an
// honest peer slashed by one honest node counts once.
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
	before[0] = []string{"eq", "h1", "nan"}
	after[from] = []string{"eq"}
	nodes := []swarmNode{
		{peer: "eq", adversary: node.AdvEquivocate, st: &node.TrainingStatus{}},
		{peer: "nan", adversary: node.AdvNaN, st: &node.TrainingStatus{}},
		{peer: "h1", st: &node.TrainingStatus{Slashed: []string{"eq"}, Rounds: rounds(before...)}},
		{peer: "h2", st: &node.TrainingStatus{Slashed: []string{"eq", "h1"}, Rounds: rounds(after...)}},
	}
	// Listed but left out whole by the aggregation rule: not aggregated.
	nodes[3].st.Rounds[from+1].Included, nodes[3].st.Rounds[from+1].Filtered = []string{"eq", "nan"}, []string{"eq", "nan"}
	nodes[2].st.Rounds[from+1].Included = []string{"eq"}
	res := &SwarmResult{Nodes: 4, Rounds: int(from) + 2}
	fillSwarm(res, nodes, 1)
	if res.SlashedCorrectly == nil || *res.SlashedCorrectly != 1 || *res.HonestSlashed != 1 || *res.BadAggregated != 1 {
		t.Fatalf("slashed correctly %v, honest slashed %v, bad aggregated %v; want 1, 1, 1", res.SlashedCorrectly, res.HonestSlashed, res.BadAggregated)
	}
	if a := res.Adversaries[0]; a.SlashedBy != 2 || a.Aggregated != 3 {
		t.Errorf("equivocator slashed by %d, aggregated %d times; want 2, 3", a.SlashedBy, a.Aggregated)
	}
	if a := res.Adversaries[1]; a.SlashedBy != 0 || a.Aggregated != 1 {
		t.Errorf("nan sender slashed by %d, aggregated %d times; want 0, 1", a.SlashedBy, a.Aggregated)
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

// TestSwarmExchangeStall: of a wait for a round to close, only the part after every other
// node had sent its contribution counts as the exchange's; a wait that began after they
// all had counts whole, and one with a node that had sent nothing by the close counts
// nothing (the round waited for it, or closed at its deadline without it).
func TestSwarmExchangeStall(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) string {
		return t0.Add(time.Duration(s * float64(time.Second))).Format(time.RFC3339Nano)
	}
	round := func(r uint64, sent, closed, stall float64) node.RoundStatus {
		rs := node.RoundStatus{Round: r, ClosedAt: at(closed), StallS: stall}
		if sent >= 0 {
			rs.SentAt = at(sent)
		}
		return rs
	}
	nodes := []swarmNode{
		// a waits 4 s for round 0 (from 6 s): c sent at 9 s, so 1 s is the exchange's;
		// for round 1 it waits 2 s (from 18 s), after b and c sent: all of it; for round 2,
		// 3 s, and c sent nothing: none of it; for round 3, 1 s, and c sent at the close:
		// none of it.
		{peer: "a", st: &node.TrainingStatus{Rounds: []node.RoundStatus{
			round(0, 5, 10, 4), round(1, 16, 20, 2), round(2, 25, 30, 3), round(3, 35, 40, 1),
		}}},
		{peer: "b", st: &node.TrainingStatus{Rounds: []node.RoundStatus{
			round(0, 8, 10, 0), round(1, 15, 20, 0), round(2, 26, 30, 0), round(3, 36, 40, 0),
		}}},
		{peer: "c", adversary: node.AdvSilent, st: &node.TrainingStatus{Rounds: []node.RoundStatus{
			round(0, 9, 10, 0), round(1, 14, 20, 0), round(2, -1, 30, 0), round(3, 40, 41, 0),
		}}},
	}
	res := &SwarmResult{Nodes: 3, Rounds: 4}
	fillSwarm(res, nodes, 100)
	if math.Abs(res.StallShare-0.10) > 1e-9 || math.Abs(res.ExchangeStallShare-0.03) > 1e-9 {
		t.Fatalf("stall share %v, of it the exchange's %v; want 0.10, 0.03", res.StallShare, res.ExchangeStallShare)
	}
}

// TestComputeGate: with two slots a third taker waits until a slot is released; with none
// there is no gate.
func TestComputeGate(t *testing.T) {
	if newComputeGate(0).forNode() != nil {
		t.Fatal("0 slots: a gate")
	}
	g := newComputeGate(2)
	a, b, c := g.forNode(), g.forNode(), g.forNode()
	r1, _ := a(), b()
	got := make(chan func())
	go func() { got <- c() }()
	select {
	case <-got:
		t.Fatal("a third node computes while two hold the slots")
	case <-time.After(50 * time.Millisecond):
	}
	r1()
	(<-got)()
}

// TestComputeGateServesTheLaggardFirst: a freed slot goes to the waiting node that has
// computed least, even when a node further ahead asked first; equals go in order of asking.
func TestComputeGateServesTheLaggardFirst(t *testing.T) {
	g := newComputeGate(1)
	ahead, holder, behind, behind2 := g.forNode(), g.forNode(), g.forNode(), g.forNode()
	for range 3 {
		ahead()()
	}
	release := holder()
	order := make(chan string, 3)
	ask := func(name string, compute func() func(), waiters int) {
		go func() {
			r := compute()
			order <- name
			r()
		}()
		for { // until it waits
			g.mu.Lock()
			n := len(g.waiting)
			g.mu.Unlock()
			if n == waiters {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}
	ask("ahead", ahead, 1)
	ask("behind", behind, 2)
	ask("behind2", behind2, 3)
	release()
	var got []string
	for range 3 {
		got = append(got, <-order)
	}
	if want := []string{"behind", "behind2", "ahead"}; !slices.Equal(got, want) {
		t.Fatalf("served %v, want %v", got, want)
	}
}
