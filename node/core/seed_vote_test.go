package core_test

import (
	"bytes"
	"testing"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
	"github.com/lowband/lowband/node/core"
)

// TestSeededRoundsStandOnTheirRecordsNotOnAVoteFromAnotherLineage: a node that caught up
// by replacing its rounds with its peers' (a rewind) is seeded with their records and the
// votes it kept, which are records of the lineage it left (another previous root, one
// contribution where the peers list four). Records of its peers that bring the votes it
// has seen for a round to a quorum, or not, must not make it close again the rounds it
// just took from them: until a quorum the round stands on its committed record (not on
// its vote), and with one the peers' list is the committed one.
func TestSeededRoundsStandOnTheirRecordsNotOnAVoteFromAnotherLineage(t *testing.T) {
	s := newSwarm(t, 3, ledgerParams(), four, []uint64{100, 100, 100, 100})
	s.start()
	for range 5 {
		s.step(everyone)
	}
	d := s.node("d")
	genesis, err := incentives.NewState(ledgerParams(), incentives.Genesis{Stakes: []incentives.Stake{
		{Peer: incentivestest.PeerID("a"), Amount: 100}, {Peer: incentivestest.PeerID("b"), Amount: 100},
		{Peer: incentivestest.PeerID("c"), Amount: 100}, {Peer: incentivestest.PeerID("d"), Amount: 100}}})
	if err != nil {
		t.Fatal(err)
	}
	snaps := s.replayRecords(d, genesis, lineage(d), core.DefaultDepth)
	if len(snaps) < 2 {
		t.Fatalf("%d snapshots", len(snaps))
	}
	for i := range snaps {
		rec := snaps[i].Record
		if len(rec.Contributions) < 2 {
			t.Fatalf("round %d lists %d contributions", rec.Round, len(rec.Contributions))
		}
		left := &incentives.Record{Version: rec.Version, Round: rec.Round, PrevRoot: bytes.Repeat([]byte{0xbb}, 32),
			ModelRoot: bytes.Repeat([]byte{1}, 32), NewRoot: bytes.Repeat([]byte{2}, 32), Contributions: rec.Contributions[:1]}
		sr, err := incentives.SignRecord(incentivestest.Identity("d"), testNetwork, testRun, left)
		if err != nil {
			t.Fatal(err)
		}
		snaps[i].Vote = sr.Marshal()
	}
	s.restart("d")
	if err := d.core.Seed(snaps); err != nil {
		t.Fatal(err)
	}
	first := snaps[0].Record.Round
	before := len(d.repairs)
	for _, from := range []*node{s.node("a"), s.node("b")} {
		for _, data := range s.records[from.id] {
			sr, rec, err := incentives.DecodeSignedRecord(data)
			if err != nil || rec.Round != first {
				continue
			}
			rd, err := d.core.Record(s.now, sr, rec)
			s.handle(d, rd, err)
		}
	}
	for _, rp := range d.repairs[before:] {
		for _, cm := range rp.Commits {
			t.Errorf("round %d, taken from the peers, closed again with %d contributions (their record lists %d)",
				cm.Record.Round, len(cm.Record.Contributions), len(snaps[cm.Record.Round-first].Record.Contributions))
		}
	}
}
