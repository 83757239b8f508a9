package core_test

import (
	"testing"

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
