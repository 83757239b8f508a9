package core_test

import (
	"bytes"
	"slices"
	"testing"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
	"github.com/lowband/lowband/node/core"
	"github.com/lowband/lowband/verify"
)

// lastRecord is the record of round r that n holds now: its latest repair of r, else its
// commit of r.
func lastRecord(n *node, r uint64) *incentives.Record {
	for i := len(n.repairs) - 1; i >= 0; i-- {
		for _, c := range n.repairs[i].Commits {
			if c.Record.Round == r {
				return c.Record
			}
		}
	}
	for _, c := range n.commits {
		if c.Record.Round == r {
			return c.Record
		}
	}
	return nil
}

// A staked signer x that signs two different records of round 0, where the honest stake
// split in equal halves ({a b d} and {b c d}), and sends them to the halves in opposite
// orders, would decide each half's list by the record it saw first. Every node that holds
// both drops x's vote for the round, so all settle on the intersection of the honest
// votes, and the two records, as evidence, slash x on every node.
func TestAgreementRecordEquivocationDropsTheVoteAndSlashes(t *testing.T) {
	x := incentivestest.PeerID("x")
	s := newSwarmWith(t, 4, ledgerParams(), four, []uint64{100, 100, 100, 100}, []incentives.Stake{{Peer: x, Amount: 100}})
	a, b, c, d := s.node("a"), s.node("b"), s.node("c"), s.node("d")
	s.drop = anyOf(dropShards(0, c, a, b), dropShards(0, a, c, d))
	closeRound0(s)
	ab, cd := a.commits[0].Record, c.commits[0].Record
	keep := func(*incentives.Record) {}
	sr1, _ := forge(t, "x", a.commits[0].Record, keep) // lists {a b d}
	sr2, _ := forge(t, "x", c.commits[0].Record, keep) // lists {b c d}
	if slices.Equal(peersOf(ab), peersOf(cd)) {
		t.Fatalf("the halves closed round 0 alike, with %v", peersOf(ab))
	}
	first := map[*node][2][]byte{a: {sr1.Marshal(), sr2.Marshal()}, b: {sr1.Marshal(), sr2.Marshal()},
		c: {sr2.Marshal(), sr1.Marshal()}, d: {sr2.Marshal(), sr1.Marshal()}}
	for _, n := range s.nodes {
		for _, data := range first[n] {
			s.deliver(delivery{to: n, msg: core.Message{Kind: core.KindRecords, Data: data}})
		}
	}
	s.flush()
	for range 3 { // rounds 1..3 close, with the evidence in their records
		s.step(everyone)
		s.tick(s.now.Add(deadlineConfig.Max))
	}
	agreeAll(t, s.nodes)
	want := ids(b, d)
	for _, n := range s.nodes {
		if got := peersOf(lastRecord(n, 0)); !slices.Equal(got, want) {
			t.Fatalf("%s holds round 0 listing %v, want the honest intersection %v", n.name, got, want)
		}
		acc := n.core.Ledger().Account(x)
		if acc.Offences != 1 || acc.Stake != 50 {
			t.Fatalf("%s: x has %d offences and stake %d, want 1 and 50 (slashed once)", n.name, acc.Offences, acc.Stake)
		}
	}
}

// A signer cannot escape its slash by making its two records too large to travel
// together: x pads each of its two records of round 0 with an evidence item of 300 KiB,
// so that the two exceed MaxEvidenceSize, and is slashed on every node all the same.
func TestAgreementRecordEquivocationOfLargeRecordsSlashes(t *testing.T) {
	x := incentivestest.PeerID("x")
	s := newSwarmWith(t, 4, ledgerParams(), four, []uint64{100, 100, 100, 100}, []incentives.Stake{{Peer: x, Amount: 100}})
	a, c := s.node("a"), s.node("c")
	s.drop = anyOf(dropShards(0, c, a, s.node("b")), dropShards(0, a, c, s.node("d")))
	closeRound0(s)
	pad := func(peer string) func(*incentives.Record) {
		return func(r *incentives.Record) {
			b := s.fx.Bundle(peer, "")
			r.Evidence = append(r.Evidence, *incentives.NewInvalidContent(b, s.fx.Shard(peer, b, 0, 0, make([]byte, 300<<10))))
		}
	}
	sr1, _ := forge(t, "x", a.commits[0].Record, pad("p"))
	sr2, _ := forge(t, "x", c.commits[0].Record, pad("q"))
	if n := len(sr1.Marshal()) + len(sr2.Marshal()); n <= incentives.MaxEvidenceSize {
		t.Fatalf("the two records are %d bytes, want more than MaxEvidenceSize", n)
	}
	for _, n := range s.nodes {
		for _, sr := range []*incentives.SignedRecord{sr1, sr2} {
			s.deliver(delivery{to: n, msg: core.Message{Kind: core.KindRecords, Data: sr.Marshal()}})
		}
	}
	s.flush()
	for range 3 { // rounds 1..3 close, with the evidence in their records
		s.step(everyone)
		s.tick(s.now.Add(deadlineConfig.Max))
	}
	agreeAll(t, s.nodes)
	for _, n := range s.nodes {
		if acc := n.core.Ledger().Account(x); acc.Offences != 1 || acc.Stake != 50 {
			t.Fatalf("%s: x has %d offences and stake %d, want 1 and 50 (slashed once)", n.name, acc.Offences, acc.Stake)
		}
	}
}

// entryOf is n's inclusion entry for round r: its peer ID and the payload CIDs of the
// shards it published for r, sorted.
func (s *swarm) entryOf(n *node, r uint64) incentives.Contribution {
	s.t.Helper()
	e := incentives.Contribution{Peer: n.id}
	for _, data := range s.shards[n.id] {
		sh, err := verify.UnmarshalShard(data, maxPayload)
		if err != nil {
			s.t.Fatal(err)
		}
		if sh.Header.Round == r {
			e.Shards = append(e.Shards, sh.Header.PayloadCID)
		}
	}
	slices.SortFunc(e.Shards, bytes.Compare)
	return e
}

// A record that arrives before the nodes close its round, from a signer with more power
// than any one node but less than half of all, does not steer their closes: each closes
// round 0 with the list it holds (all four), and none repairs.
func TestAgreementEarlyRecordOfAMinorityDoesNotSteerTheClose(t *testing.T) {
	x := incentivestest.PeerID("x")
	s := newSwarmWith(t, 5, ledgerParams(), four, []uint64{100, 100, 100, 100}, []incentives.Stake{{Peer: x, Amount: 150}})
	a := s.node("a")
	s.start()
	s.step(everyone) // round 0's shards are out
	early := &incentives.Record{Version: incentives.RecordVersion, Round: 0, PrevRoot: a.core.Ledger().Head,
		Contributions: []incentives.Contribution{s.entryOf(a, 0)}, ModelRoot: make([]byte, 32), NewRoot: make([]byte, 32)}
	sr, _ := forge(t, "x", early, func(*incentives.Record) {})
	for _, n := range s.nodes {
		s.deliver(delivery{to: n, msg: core.Message{Kind: core.KindRecords, Data: sr.Marshal()}})
	}
	s.step(everyone)
	s.tick(s.now.Add(deadlineConfig.Max))
	agreeAll(t, s.nodes)
	want := ids(s.nodes...)
	for _, n := range s.nodes {
		if got := peersOf(n.commits[0].Record); !slices.Equal(got, want) {
			t.Fatalf("%s closed round 0 with %v, want all four", n.name, got)
		}
		if len(n.repairs) != 0 {
			t.Fatalf("%s repaired %d times", n.name, len(n.repairs))
		}
	}
}

// A record of the round after the next to close, from a signer that is jailed in the
// ledger in force but free in that round's ledger, is held until the round closes and
// weighed by that round's ledger: x (450 of 850 then) decides round 5 with its empty list.
func TestAgreementRecordAheadWeighedByItsRoundsLedger(t *testing.T) {
	x := incentivestest.PeerID("x")
	s := newSwarmWith(t, 6, ledgerParams(), four, []uint64{100, 100, 100, 100}, []incentives.Stake{{Peer: x, Amount: 500}})
	closeRound0(s)
	ev := s.fx.Equivocation("x", 1, 0, "v") // in round 1's record: x jailed until round 5
	for _, n := range s.nodes {
		s.deliver(delivery{to: n, msg: core.Message{Kind: core.KindEvidence, Data: ev.Marshal()}})
	}
	for range 3 { // rounds 1..3 close
		s.step(everyone)
		s.tick(s.now.Add(deadlineConfig.Max))
	}
	a := s.node("a")
	if v := a.core.View(); v.NextClose != 4 || !a.core.Ledger().Jailed(x) {
		t.Fatalf("view %+v, x jailed %v; want round 4 next to close, x jailed", v, a.core.Ledger().Jailed(x))
	}
	empty := &incentives.Record{Version: incentives.RecordVersion, Round: 5, PrevRoot: make([]byte, 32), ModelRoot: make([]byte, 32), NewRoot: make([]byte, 32)}
	sr, rec := forge(t, "x", empty, func(*incentives.Record) {})
	for _, n := range s.nodes {
		rd, err := n.core.Record(s.now, sr, rec)
		s.handle(n, rd, err)
	}
	for range 2 { // rounds 4 and 5 close
		s.step(everyone)
		s.tick(s.now.Add(deadlineConfig.Max))
	}
	agreeAll(t, s.nodes)
	for _, n := range s.nodes {
		if got := lastRecord(n, 5); got == nil || len(got.Contributions) != 0 {
			t.Fatalf("%s holds round 5 listing %v, want x's empty list", n.name, got)
		}
	}
}

// A node that holds one of x's two records of round 0 and learns of the other only in the
// evidence drops x's vote as the nodes that hold both do.
func TestAgreementRecordEquivocationLearnedFromEvidenceDropsTheVote(t *testing.T) {
	x := incentivestest.PeerID("x")
	s := newSwarmWith(t, 7, ledgerParams(), four, []uint64{100, 100, 100, 100}, []incentives.Stake{{Peer: x, Amount: 100}})
	a, b, c, d := s.node("a"), s.node("b"), s.node("c"), s.node("d")
	s.drop = anyOf(dropShards(0, c, a, b), dropShards(0, a, c, d))
	closeRound0(s)
	keep := func(*incentives.Record) {}
	sr1, _ := forge(t, "x", a.commits[0].Record, keep)
	sr2, _ := forge(t, "x", c.commits[0].Record, keep)
	ev, err := incentives.NewRecordEquivocation(sr1, sr2)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []*node{a, b, c} {
		s.deliver(delivery{to: n, msg: core.Message{Kind: core.KindRecords, Data: sr1.Marshal()}})
	}
	s.deliver(delivery{to: d, msg: core.Message{Kind: core.KindRecords, Data: sr2.Marshal()}})
	s.deliver(delivery{to: d, msg: core.Message{Kind: core.KindEvidence, Data: ev.Marshal()}})
	for _, n := range []*node{a, b, c} {
		s.deliver(delivery{to: n, msg: core.Message{Kind: core.KindRecords, Data: sr2.Marshal()}})
	}
	s.flush()
	agreeAll(t, s.nodes)
	for _, n := range s.nodes {
		if got := peersOf(lastRecord(n, 0)); !slices.Equal(got, ids(b, d)) {
			t.Fatalf("%s holds round 0 listing %v, want the honest intersection", n.name, got)
		}
	}
}
