package core_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
	"github.com/lowband/lowband/node/core"
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
	m, err := round.New(cfg, round.State{Params: theta0()})
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

// forge signs rec, changed by edit, as the identity name.
func forge(t *testing.T, name string, rec *incentives.Record, edit func(*incentives.Record)) (*incentives.SignedRecord, *incentives.Record) {
	t.Helper()
	c := *rec
	c.Contributions = slices.Clone(rec.Contributions)
	edit(&c)
	c.Canonicalize()
	sr, err := incentives.SignRecord(incentivestest.Identity(name), testNetwork, testRun, &c)
	if err != nil {
		t.Fatal(err)
	}
	sr, out, err := incentives.DecodeSignedRecord(sr.Marshal())
	if err != nil {
		t.Fatal(err)
	}
	return sr, out
}

// (e) Hostile records change nothing they must not: a record outside the window, one of a
// signer without voting power, a second record of one signer; and one listing a
// contribution nobody serves leaves the node on its state, waiting.
func TestAgreementHostileRecords(t *testing.T) {
	x := incentivestest.PeerID("x")
	s := newSwarmWith(t, 5, ledgerParams(), four, []uint64{100, 100, 100, 100}, []incentives.Stake{{Peer: x, Amount: 1000}})
	s.start()
	for range 5 { // rounds 0..3 close (at the deadline: x never sends)
		s.step(everyone)
		s.tick(s.now.Add(deadlineConfig.Max))
	}
	root := agreeAll(t, s.nodes)
	a := s.node("a")
	if v := a.core.View(); v.NextClose != 4 || v.RepairFrom != 1 {
		t.Fatalf("view %+v, want rounds 1-3 open to repair", v)
	}
	recs := map[uint64]*incentives.Record{}
	for _, data := range s.records[a.id] {
		_, rec, err := incentives.DecodeSignedRecord(data)
		if err != nil {
			t.Fatal(err)
		}
		recs[rec.Round] = rec
	}
	onlyA := func(r *incentives.Record) { r.Contributions = r.Contributions[:1] }
	same := func(*incentives.Record) {}
	steps := []struct {
		name   string
		signer string
		round  uint64
		edit   func(*incentives.Record)
		want   error
	}{
		{"outside the window (x's 1000 would decide it)", "x", 0, onlyA, core.ErrRecordWindow},
		{"far in the future", "x", 9, same, core.ErrRecordWindow},
		{"no voting power", "z", 1, onlyA, core.ErrRecordNoPower},
		{"x's first record of round 1, the list everyone has", "x", 1, same, nil},
		{"x's first record of round 1 again", "x", 1, same, nil},
		{"x's second record of round 1", "x", 1, onlyA, core.ErrRecordDuplicate},
	}
	for _, st := range steps {
		sr, rec := forge(t, st.signer, recs[min(st.round, 3)], func(r *incentives.Record) { r.Round = st.round; st.edit(r) })
		rd, err := a.core.Record(s.now, sr, rec)
		if !errors.Is(err, st.want) || (st.want == nil) != (err == nil) || rd.Repair != nil || rd.Fetch != nil || rd.Commit != nil {
			t.Fatalf("%s: %v (want %v), repair %v, fetch %v", st.name, err, st.want, rd.Repair, rd.Fetch)
		}
		s.handle(a, rd, nil)
		s.flush()
		if got := agreeAll(t, s.nodes); got != root {
			t.Fatalf("%s moved the root", st.name)
		}
	}
	if d := a.core.Agreement().Duplicates; d != 1 {
		t.Fatalf("%d duplicates counted, want 1", d)
	}

	// x (more than half of the power) lists a contribution nobody has.
	ghost := incentives.Contribution{Peer: incentivestest.PeerID("y"), Shards: [][]byte{verify.PayloadCID([]byte("nobody serves this"))}}
	sr, rec := forge(t, "x", recs[2], func(r *incentives.Record) { r.Contributions = append(r.Contributions, ghost) })
	rd, err := a.core.Record(s.now, sr, rec)
	if err != nil || rd.Repair != nil || len(rd.Fetch) != 1 || !bytes.Equal(rd.Fetch[0].CID, ghost.Shards[0]) || rd.Fetch[0].Peer != ghost.Peer {
		t.Fatalf("a canonical entry nobody serves: %v, repair %v, fetch %+v", err, rd.Repair, rd.Fetch)
	}
	s.handle(a, rd, err)
	s.flush()
	ag := a.core.Agreement()
	if ag.Agrees || ag.Waiting != 1 || ag.Root != root || a.core.Agreement().CanonicalRound != 1 {
		t.Fatalf("waiting on a ghost: %+v; want the old root, not agreeing, waiting for 1 CID", ag)
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
