package core_test

import (
	"testing"
	"time"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/node/core"
)

// TestAgreementCloseWaitsForTheRecordsOfItsWindow: f misses a's shards of round 2 and
// closes it without them, and the others' records of rounds up to 2 reach f only some
// seconds later (a restarted node whose peers' gossip lags), while every other shard
// comes at once. f closes rounds 3 and 4, then waits to close round 5, whose close would
// leave round 2 out of its repair window, until those records come (within the deadline's
// maximum); then it repairs round 2 and every round after onto the others' root. Were it
// to close on, the records would find round 2 gone from its window and f would stay on a
// lineage of its own.
func TestAgreementCloseWaitsForTheRecordsOfItsWindow(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		s := newSwarm(t, seed, ledgerParams(), six, []uint64{100, 100, 100, 100, 100, 100})
		a, f := s.node("a"), s.node("f")
		var held []delivery
		holdRecords := func(d delivery) bool {
			if d.to != f || d.msg.Kind != core.KindRecords {
				return false
			}
			_, rec, err := incentives.DecodeSignedRecord(d.msg.Data)
			if err != nil || rec.Round > 2 {
				return false
			}
			held = append(held, d)
			return true
		}
		s.drop, s.manual = anyOf(dropShards(2, a, f), holdRecords), true
		s.start()
		s.step(everyone)
		for range 3 { // rounds 0, 1 and 2 close; f closes 2 without a
			s.step(everyone)
			s.tick(s.now.Add(deadlineConfig.Max))
		}
		s.manual = false
		for range 8 { // 8 seconds: every shard comes; f's round 2 records do not
			s.step(everyone)
		}
		if h := f.core.Agreement().Head; h > 2+core.DefaultDepth {
			t.Fatalf("seed %d: f closed round %d before the records of round 2 came", seed, h)
		}
		s.drop = nil
		s.pool = append(s.pool, held...)
		for _, n := range s.nodes {
			s.serve(n, n.fetch)
		}
		s.flush()
		for range 3 {
			s.step(everyone)
			s.tick(s.now.Add(deadlineConfig.Max))
		}
		fa := f.core.Agreement()
		if !fa.Agrees || fa.Stale || fa.Waiting != 0 {
			t.Fatalf("seed %d: f's agreement %+v", seed, fa)
		}
		// The rounds f closed before the records came; it is some rounds behind the
		// others by now (this harness drops records of rounds past the next to close).
		for r := uint64(2); r <= 2+core.DefaultDepth; r++ {
			if got, want := rootAt(f, r), rootAt(a, r); got != want {
				t.Fatalf("seed %d: round %d: f holds root %x, a %x", seed, r, got[:4], want[:4])
			}
		}
		if len(f.repairs) == 0 || f.repairs[0].From != 2 {
			t.Fatalf("seed %d: f repaired %d times, want a repair from round 2", seed, len(f.repairs))
		}
	}
}

// rootAt is the state root n holds for round r: its commit's, or the last repair's.
func rootAt(n *node, r uint64) [32]byte {
	var out [32]byte
	for _, c := range n.commits {
		if c.Record.Round == r {
			copy(out[:], c.Record.NewRoot)
		}
	}
	for _, rp := range n.repairs {
		for _, c := range rp.Commits {
			if c.Record.Round == r {
				copy(out[:], c.Record.NewRoot)
			}
		}
	}
	return out
}

// TestAgreementCloseWaitsForRecordsThatCouldTipTheList: a's shards of round 2 reach b and
// d but not c, e or f, so that a's entry is in the votes of a, b and d and out of those of
// c, e and f: with every vote, 300 of 600, it is out. e's record of round 2 is slow to reach
// f, while e's records of the later rounds come. Without it f counts a majority for round
// 2 (500 of 600) in which a's entry is in (300 of 500), repairs onto that, and closes rounds
// 3 and 4. Its close of round 5 would leave round 2 out of its window, and e's record, which
// could tip a's entry, is on its way (f holds e's later ones): f waits for it, up to the
// deadline's minimum from when round 5 could close, then repairs round 2 onto the list
// every other node holds. Were it to close on, e's record would find round 2 gone and f
// would stay on a lineage of its own. The wait counts from when round 5 could close, also
// when f closed round 4 at its deadline (b's shards of round 4 never reach it by gossip),
// so that round 5's own clock had run out already. A record that never comes holds f up
// for the minimum only.
func TestAgreementCloseWaitsForRecordsThatCouldTipTheList(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		for _, tc := range []struct {
			name         string
			comes, lateB bool
		}{{"the record comes", true, false}, {"round 4 closed at its deadline", true, true}, {"the record never comes", false, false}} {
			s := newSwarm(t, seed, ledgerParams(), six, []uint64{100, 100, 100, 100, 100, 100})
			a, b, c, e, f := s.node("a"), s.node("b"), s.node("c"), s.node("e"), s.node("f")
			var held []delivery
			holdE2 := func(d delivery) bool {
				if d.to != f || d.from != e || d.msg.Kind != core.KindRecords {
					return false
				}
				_, rec, err := incentives.DecodeSignedRecord(d.msg.Data)
				if err != nil || rec.Round != 2 {
					return false
				}
				held = append(held, d)
				return true
			}
			drops := []func(delivery) bool{dropShards(2, a, c, e, f), holdE2}
			if tc.lateB {
				drops = append(drops, dropShards(4, b, f))
			}
			s.drop = anyOf(drops...)
			s.start()
			s.step(everyone)
			for range 3 { // rounds 0, 1 and 2 close; c, e and f close 2 without a
				s.step(everyone)
				s.tick(s.now.Add(deadlineConfig.Max))
			}
			waiting := uint64(2 + core.DefaultDepth - 1)
			for range 2 * int(deadlineConfig.Max/time.Second) { // rounds 3 and 4 close
				if f.core.Agreement().Head >= waiting {
					break
				}
				s.step(everyone)
			}
			s.step(everyone) // a second under the deadline's minimum
			if len(held) == 0 {
				t.Fatalf("seed %d, %s: e's record of round 2 never went to f", seed, tc.name)
			}
			if h := f.core.Agreement().Head; h != waiting {
				t.Fatalf("seed %d, %s: f's head is round %d, want %d: it waits to close round %d", seed, tc.name, h, waiting, waiting+1)
			}
			if !tc.comes {
				for range int(deadlineConfig.Min/time.Second) + 1 {
					s.step(everyone)
				}
				if h := f.core.Agreement().Head; h <= waiting {
					t.Fatalf("seed %d, %s: f's head is round %d past the deadline's minimum, waiting for a record that never comes", seed, tc.name, h)
				}
				continue
			}
			s.drop = nil
			s.pool = append(s.pool, held...)
			s.flush()
			for range 3 {
				s.step(everyone)
			}
			for r := uint64(2); r <= 2+core.DefaultDepth; r++ {
				if got, want := rootAt(f, r), rootAt(a, r); got != want {
					t.Fatalf("seed %d, %s: round %d: f holds root %x, a %x", seed, tc.name, r, got[:4], want[:4])
				}
			}
			if got, want := rootAt(f, 2), rootAt(c, 2); got != want {
				t.Fatalf("seed %d, %s: round 2: f holds root %x, c (which never had a's shards) %x", seed, tc.name, got[:4], want[:4])
			}
		}
	}
}
