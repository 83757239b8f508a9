package core_test

import (
	"slices"
	"testing"

	"github.com/lowband/lowband/verify"
)

// TestResumedCoreSignsNoShardOfTheRoundsItSkips: a Core resumed at round 2 (a restart
// that may have signed shards of rounds 0 and 1 before it stopped) starts no local work
// until round 0 closes, signs no shard of rounds 0 or 1, closes those rounds on the others'
// contributions with the same roots as they do, and then trains and contributes from
// round 2 on.
func TestResumedCoreSignsNoShardOfTheRoundsItSkips(t *testing.T) {
	// d unstaked: nobody waits for its missing contributions to rounds 0 and 1, and it
	// waits for nobody but the others.
	s := newSwarm(t, 1, ledgerParams(), four, []uint64{100, 100, 100, 0})
	d := s.node("d")
	if err := d.core.Resume(2, nil); err != nil {
		t.Fatal(err)
	}
	s.start()
	if d.train != nil {
		t.Fatalf("resumed at round 2, Start asked for local work of round %d", d.train.Round)
	}
	for range 7 {
		s.step(everyone)
	}
	var rounds []uint64
	for _, data := range s.shards[d.id] {
		sh, err := verify.UnmarshalShard(data, maxPayload)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(rounds, sh.Header.Round) {
			rounds = append(rounds, sh.Header.Round)
		}
	}
	if len(rounds) == 0 || rounds[0] != 2 {
		t.Fatalf("the resumed core signed shards of rounds %v, want none before 2", rounds)
	}
	a := s.node("a")
	if len(d.sums) < len(a.sums) {
		t.Fatalf("d closed %d rounds, a %d", len(d.sums), len(a.sums))
	}
	d.sums = d.sums[:len(a.sums)] // d closes each round as soon as it may: it has no own work to wait for
	sameRoots(t, s.nodes)
	for _, sum := range d.sums {
		if in := slices.Contains(sum.Included, d.id); in != (sum.Round >= 2) {
			t.Errorf("round %d: d included %v", sum.Round, in)
		}
	}
}
