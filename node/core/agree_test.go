package core_test

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"
	"testing"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/node/core"
	"github.com/lowband/lowband/training"
	"github.com/lowband/lowband/training/round"
	"github.com/lowband/lowband/verify"
)

// stateBits is the exact bytes of a model state: every value of θ, then the momentum.
func stateBits(st round.State) []byte {
	var b []byte
	for _, t := range st.Params {
		for _, v := range t.Data {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
		}
	}
	for _, v := range st.Momentum {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	}
	return b
}

// agreeAll fails unless the nodes hold one state root, one θ and momentum to the bit and
// one ledger, wait for nothing, and returns the state root.
func agreeAll(t *testing.T, nodes []*node) [32]byte {
	t.Helper()
	ref := nodes[0]
	ra := ref.core.Agreement()
	for _, n := range nodes {
		a := n.core.Agreement()
		if !a.Agrees || a.Waiting != 0 {
			t.Fatalf("%s: agrees %v, waiting for %d CIDs", n.name, a.Agrees, a.Waiting)
		}
		if a.Head != ra.Head || a.Root != ra.Root {
			t.Fatalf("%s holds round %d root %x, %s round %d root %x", n.name, a.Head, a.Root[:4], ref.name, ra.Head, ra.Root[:4])
		}
		if !bytes.Equal(stateBits(n.core.State()), stateBits(ref.core.State())) || !n.core.Ledger().Equal(ref.core.Ledger()) {
			t.Fatalf("%s and %s share a root but not θ or the ledger", n.name, ref.name)
		}
	}
	return ra.Root
}

// dropShards loses the gossip of round r's shards of peer from, to the nodes in to.
func dropShards(r uint64, from *node, to ...*node) func(delivery) bool {
	return func(d delivery) bool {
		if d.fetch || d.msg.Kind != core.KindShards || d.from != from || !slices.Contains(to, d.to) {
			return false
		}
		sh, err := verify.UnmarshalShard(d.msg.Data, maxPayload)
		return err == nil && sh.Header.Round == r
	}
}

// anyOf loses what any of fs loses.
func anyOf(fs ...func(delivery) bool) func(delivery) bool {
	return func(d delivery) bool {
		return slices.ContainsFunc(fs, func(f func(delivery) bool) bool { return f(d) })
	}
}

// closeRound0 does the local work of rounds 0 and 1 and closes round 0 at the deadline.
func closeRound0(s *swarm) {
	s.start()
	s.step(everyone)
	s.step(everyone)
	s.tick(s.now.Add(deadlineConfig.Max))
}

// halves: four nodes of equal stake; a and b miss c's round 0 shards, c and d miss a's.
// a and b close round 0 with {a b d}, c and d with {b c d}.
func halves(t *testing.T, seed uint64) *swarm {
	s := newSwarm(t, seed, ledgerParams(), four, []uint64{100, 100, 100, 100})
	a, b, c, d := s.node("a"), s.node("b"), s.node("c"), s.node("d")
	s.drop = anyOf(dropShards(0, c, a, b), dropShards(0, a, c, d))
	closeRound0(s)
	return s
}

// (a) Two halves of equal stake that closed a round with different inclusion lists
// converge on one root, the intersection's, once they have exchanged their records; each
// repaired once.
func TestAgreementEqualHalvesConvergeOnIntersection(t *testing.T) {
	s := halves(t, 1)
	agreeAll(t, s.nodes)
	want := ids(s.node("b"), s.node("d"))
	for _, n := range s.nodes {
		if len(n.sums) != 1 || len(n.repairs) == 0 {
			t.Fatalf("%s closed %d rounds, repaired %d times", n.name, len(n.sums), len(n.repairs))
		}
		rp := n.repairs[len(n.repairs)-1]
		if rp.From != 0 || len(rp.Commits) != 1 || !slices.Equal(peersOf(rp.Commits[0].Record), want) {
			t.Fatalf("%s repaired from %d to %d rounds listing %v, want round 0 listing %v", n.name, rp.From, len(rp.Commits), peersOf(rp.Commits[0].Record), want)
		}
		if a := n.core.Agreement(); a.Repairs != len(n.repairs) || a.CanonicalRound != 0 || a.Canonical != a.Root {
			t.Fatalf("%s: agreement %+v after %d repairs", n.name, a, len(n.repairs))
		}
	}
}

func peersOf(rec *incentives.Record) []string {
	var out []string
	for _, c := range rec.Contributions {
		out = append(out, c.Peer)
	}
	return out
}

// (f) A repaired state is, to the bit, the state of a round machine that aggregated
// exactly the canonical list from the start, and the repaired ledger the one its record
// gives.
func TestAgreementRepairedStateEqualsCanonicalFromStart(t *testing.T) {
	s := halves(t, 2)
	agreeAll(t, s.nodes)
	b := s.node("b")
	ref := s.referenceState(b, map[string]float64{b.id: 1, s.node("d").id: 1})
	if got := b.core.State(); !bytes.Equal(stateBits(got), stateBits(ref)) || got.Round != ref.Round {
		t.Fatal("the repaired θ and momentum differ from those of a close over the canonical list")
	}
	g, err := incentives.NewState(ledgerParams(), incentives.Genesis{Stakes: []incentives.Stake{
		{Peer: s.node("a").id, Amount: 100}, {Peer: b.id, Amount: 100}, {Peer: s.node("c").id, Amount: 100}, {Peer: s.node("d").id, Amount: 100}}})
	if err != nil {
		t.Fatal(err)
	}
	rec := b.repairs[len(b.repairs)-1].Commits[0].Record
	root := ref.Root()
	want, err := g.Build(rec.Contributions, nil, root[:], s.fx.Checker())
	if err != nil {
		t.Fatal(err)
	}
	if !b.core.Ledger().Equal(want.State) || !bytes.Equal(rec.NewRoot, want.Record.NewRoot) {
		t.Fatal("the repaired ledger or root differs from the canonical record's")
	}
}

// referenceState is reference's machine state after round 0.
func (s *swarm) referenceState(n *node, weights map[string]float64) round.State {
	s.t.Helper()
	cfg := roundConfig(n.id)
	cfg.Weight = weights[n.id]
	m, err := round.New(cfg, round.State{Params: s.model()})
	if err != nil {
		s.t.Fatal(err)
	}
	st, err := m.Start()
	if err != nil {
		s.t.Fatal(err)
	}
	rd, err := m.LocalDone(0, local(n.name, &st))
	if err != nil {
		s.t.Fatal(err)
	}
	if _, err := m.LocalDone(1, local(n.name, rd.Start)); err != nil {
		s.t.Fatal(err)
	}
	for peer, w := range weights {
		if peer != n.id {
			c := s.contribution(peer, 0)
			c.Weight = w
			if err := m.Receive(c); err != nil {
				s.t.Fatal(err)
			}
		}
	}
	if _, err := m.Close(0); err != nil {
		s.t.Fatal(err)
	}
	return m.State()
}

var six = []string{"a", "b", "c", "d", "e", "f"}

// (b) Six nodes each miss a different contribution at close: every entry is listed by five
// of six, so the canonical list holds all six; each fetches the one it lacks by CID and all
// converge on the root of all six, within the round.
func TestAgreementEachMissesOneConvergesByFetch(t *testing.T) {
	s := newSwarm(t, 3, ledgerParams(), six, []uint64{100, 100, 100, 100, 100, 100})
	var drops []func(delivery) bool
	for i, n := range s.nodes {
		drops = append(drops, dropShards(0, s.nodes[(i+1)%len(s.nodes)], n))
	}
	s.drop = anyOf(drops...)
	closeRound0(s)
	agreeAll(t, s.nodes)
	weights := map[string]float64{}
	for _, n := range s.nodes {
		weights[n.id] = 1
	}
	ref := s.referenceState(s.node("a"), weights)
	for i, n := range s.nodes {
		if len(n.sums) != 1 || len(n.sums[0].Included) != 5 {
			t.Fatalf("%s closed round 0 with %d contributions, want 5", n.name, len(n.sums[0].Included))
		}
		lacked := s.nodes[(i+1)%len(s.nodes)].id
		if !slices.ContainsFunc(n.fetch, func(w core.Want) bool { return w.CID != nil && w.Peer == lacked && w.Round == 0 }) {
			t.Fatalf("%s did not fetch %s's shards by CID: %v", n.name, lacked, n.fetch)
		}
	}
	if !bytes.Equal(stateBits(s.nodes[0].core.State()), stateBits(ref)) {
		t.Fatal("the converged state is not that of all six contributions")
	}
}

// Two entries of a round may list one payload: f sends exactly e's update (its local
// work is e's, so its codec's output is e's bytes). A node that missed both at close asks
// for each signer's shard by CID in one go, not for one and then, a round trip later, the
// other, and converges on the root of all six.
func TestAgreementFetchesBothEntriesOfOnePayload(t *testing.T) {
	s := newSwarm(t, 3, ledgerParams(), six, []uint64{100, 100, 100, 100, 100, 100})
	e, f, a := s.node("e"), s.node("f"), s.node("a")
	f.work = func(start *round.Start) []training.Tensor { return local(e.name, start) }
	s.drop = anyOf(dropShards(0, e, a), dropShards(0, f, a))
	closeRound0(s)
	agreeAll(t, s.nodes)
	if len(a.sums) != 1 || len(a.sums[0].Included) != 4 {
		t.Fatalf("a closed round 0 with %d contributions, want 4", len(a.sums[0].Included))
	}
	if len(a.cidFetch) == 0 {
		t.Fatal("a fetched nothing by CID")
	}
	first := a.cidFetch[0] // both in the first ask: one round trip, not one per signer
	var cids [][]byte
	for _, n := range []*node{e, f} {
		i := slices.IndexFunc(first, func(w core.Want) bool { return w.Peer == n.id && w.Round == 0 })
		if i < 0 {
			t.Fatalf("a's first fetch by CID did not ask for %s's shard: %v", n.name, first)
		}
		cids = append(cids, first[i].CID)
	}
	if !bytes.Equal(cids[0], cids[1]) {
		t.Fatal("e's and f's shards do not carry one payload: the test does not test the copy")
	}
	weights := map[string]float64{}
	for _, n := range s.nodes {
		weights[n.id] = 1
	}
	if ref := s.referenceState(s.node("b"), weights); !bytes.Equal(stateBits(a.core.State()), stateBits(ref)) {
		t.Fatal("a's repaired state is not that of all six contributions")
	}
}

// (c) A minority of two of six, cut off for two rounds, closes them with its own two
// contributions; once the partition heals, records of the next round show the chains
// parted, both sides resend their votes, and within two rounds the minority holds the
// majority's root again, having fetched the contributions it lacked. The majority keeps
// its lists of the partition's rounds.
func TestAgreementPartitionedMinorityConvergesBack(t *testing.T) {
	s := newSwarm(t, 4, ledgerParams(), six, []uint64{100, 100, 100, 100, 100, 100})
	minority := []*node{s.node("e"), s.node("f")}
	cut := func(d delivery) bool { return slices.Contains(minority, d.from) != slices.Contains(minority, d.to) }
	s.start()
	s.step(everyone)
	s.step(everyone) // round 0 closes with everyone
	agreeAll(t, s.nodes)
	s.drop = cut
	for range 2 {
		s.step(everyone)
		s.tick(s.now.Add(deadlineConfig.Max))
	}
	e, a := s.node("e"), s.node("a")
	if e.core.Agreement().Root == a.core.Agreement().Root {
		t.Fatal("the partition did not part the roots")
	}
	s.drop = nil
	for range 2 {
		s.step(everyone)
		s.tick(s.now.Add(deadlineConfig.Max))
	}
	agreeAll(t, s.nodes)
	for _, n := range minority {
		if len(n.repairs) == 0 {
			t.Fatalf("%s converged without a repair", n.name)
		}
	}
	for _, n := range s.nodes[:4] { // rounds 1 and 2 closed in the partition
		for _, rp := range n.repairs {
			if rp.From < 3 {
				t.Fatalf("majority node %s repaired round %d of the partition", n.name, rp.From)
			}
		}
	}
}

// (d) The decision does not depend on the order records arrive in: the halves converge
// on the same root, with the same records, whatever order the swarm delivers in.
func TestAgreementSameInAnyRecordOrder(t *testing.T) {
	var root [32]byte
	var head []byte
	for seed := uint64(10); seed < 15; seed++ {
		s := halves(t, seed)
		r := agreeAll(t, s.nodes)
		rp := s.nodes[0].repairs
		rec := rp[len(rp)-1].Commits[0].Record.Marshal()
		if seed > 10 && (r != root || !bytes.Equal(rec, head)) {
			t.Fatalf("delivery order %d: root %x, record equal %v; first order: root %x", seed, r[:4], bytes.Equal(rec, head), root[:4])
		}
		root, head = r, rec
	}
}

// A node that closes a round after the others' records for it arrived closes it with the
// list they decide at once: its commit and summary are the canonical ones, with no repair.
func TestAgreementLateCloserSettlesAtClose(t *testing.T) {
	s := newSwarm(t, 6, ledgerParams(), four, []uint64{100, 100, 100, 100})
	a, b, c, d := s.node("a"), s.node("b"), s.node("c"), s.node("d")
	s.drop = anyOf(dropShards(0, c, a, b), dropShards(0, a, c, d))
	s.start()
	s.step(everyone)
	s.step(func(n *node) bool { return n != d }) // d's local work of round 1 is late
	s.tick(s.now.Add(deadlineConfig.Max))
	if len(d.sums) != 0 || len(a.sums) != 1 {
		t.Fatalf("d closed %d rounds, a %d; want 0 and 1", len(d.sums), len(a.sums))
	}
	s.step(func(n *node) bool { return n == d })
	s.tick(s.now.Add(deadlineConfig.Max))
	agreeAll(t, s.nodes)
	want := ids(b, d)
	if len(d.sums) != 1 || !slices.Equal(d.sums[0].Included, want) || len(d.repairs) != 0 || d.core.Agreement().Repairs != 0 {
		t.Fatalf("d closed with %v after %d repairs, want %v at once", d.sums[0].Included, len(d.repairs), want)
	}
	if d.sums[0].StateRoot != d.core.Agreement().Root || d.sums[0].ModelRoot != d.core.ModelRoot() {
		t.Fatal("d's summary does not describe the state it holds")
	}
}

// When a repair stops at a round for a contribution it lacks, the node asks at once for
// what the later rounds' lists miss too: one answer to what it asked brings it to the
// canonical state, not one round trip per round.
func TestAgreementFetchesLaterRoundsAhead(t *testing.T) {
	s := newSwarm(t, 7, ledgerParams(), six, []uint64{100, 100, 100, 100, 100, 100})
	var drops []func(delivery) bool
	for i, n := range s.nodes {
		drops = append(drops, dropShards(0, s.nodes[(i+1)%6], n), dropShards(1, s.nodes[(i+1)%6], n))
	}
	records := func(d delivery) bool { return d.msg.Kind == core.KindRecords }
	s.drop = anyOf(append(drops, records)...)
	s.start()
	s.step(everyone)
	s.step(everyone)
	s.tick(s.now.Add(deadlineConfig.Max)) // round 0 closes, each node missing one
	s.step(everyone)
	s.tick(s.now.Add(deadlineConfig.Max)) // round 1 too; no record has gone anywhere
	s.drop, s.manual = nil, true
	for _, r := range []int{0, 1} {
		for _, from := range s.nodes {
			for _, to := range s.nodes {
				if to != from {
					s.send(delivery{from: from, to: to, msg: core.Message{Kind: core.KindRecords, Data: s.records[from.id][r]}})
				}
			}
		}
	}
	s.flush()
	for _, n := range s.nodes { // one answer to everything asked so far
		s.serve(n, n.fetch)
	}
	s.flush()
	agreeAll(t, s.nodes)
}
