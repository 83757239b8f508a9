package core_test

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
	"github.com/lowband/lowband/node/core"
	"github.com/lowband/lowband/verify"
)

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
// signer without voting power, a second record of one signer (its vote is dropped: the
// honest votes decide as before) and a third; and one listing a
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
		{"x's second record of round 1: its vote dropped", "x", 1, onlyA, nil},
		{"x's third record of round 1", "x", 1, func(r *incentives.Record) { r.Contributions = r.Contributions[1:2] }, core.ErrRecordDuplicate},
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
	if ag := a.core.Agreement(); ag.Duplicates != 1 || ag.Equivocations != 1 {
		t.Fatalf("%d duplicates and %d equivocations counted, want 1 each", ag.Duplicates, ag.Equivocations)
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
	// No round rests on more than half of the power: x's vote on round 1 was dropped.
	if ag.Agrees || ag.Waiting != 1 || ag.Root != root || ag.CanonicalRound != 0 || ag.Canonical != [32]byte{} {
		t.Fatalf("waiting on a ghost: %+v; want the old root, not agreeing, waiting for 1 CID", ag)
	}
}
