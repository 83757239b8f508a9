package core_test

import (
	"testing"

	"github.com/lowband/lowband/node/core"
	"github.com/lowband/lowband/node/store"
)

// lateRepair: six nodes of equal stake; f misses a's shards of round 2 and closes it
// without them, the others with them. The shards f then asks for by CID reach it only
// after `after` more rounds have closed.
func lateRepair(t *testing.T, seed uint64, after int) *swarm {
	s := newSwarm(t, seed, ledgerParams(), six, []uint64{100, 100, 100, 100, 100, 100})
	a, f := s.node("a"), s.node("f")
	s.drop, s.manual = dropShards(2, a, f), true
	s.start()
	s.step(everyone)
	for range 3 { // rounds 0, 1 and 2 close
		s.step(everyone)
		s.tick(s.now.Add(deadlineConfig.Max))
	}
	s.drop = nil
	for range after {
		s.step(everyone)
		s.tick(s.now.Add(deadlineConfig.Max))
	}
	s.manual = false
	for _, n := range s.nodes {
		s.serve(n, n.fetch)
	}
	s.flush()
	for range 2 {
		s.step(everyone)
		s.tick(s.now.Add(deadlineConfig.Max))
	}
	return s
}

// A repair waiting for shards keeps its round open while the rounds after it close: here
// the shard f lacks comes back only once three more rounds (the repair depth) have closed,
// and f still repairs round 2 and every round after, onto the others' root. Past twice the
// depth (as far back as peers keep shards to serve) it gives up, stale.
func TestAgreementRepairWaitsPastTheDepthForItsShards(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		s := lateRepair(t, seed, core.DefaultDepth)
		agreeAll(t, s.nodes)
		f := s.node("f")
		if len(f.repairs) == 0 || f.repairs[0].From != 2 {
			t.Fatalf("seed %d: f repaired %d times, want a repair from round 2", seed, len(f.repairs))
		}
		if a := f.core.Agreement(); a.Stale || a.Head < 2+core.DefaultDepth {
			t.Fatalf("seed %d: f's agreement %+v", seed, a)
		}
	}
	s := lateRepair(t, 4, 2*core.DefaultDepth)
	agreeAll(t, s.nodes[:5])
	if a := s.node("f").core.Agreement(); !a.Stale || a.Agrees {
		t.Fatalf("a repair that waited past twice the depth: agreement %+v, want stale", a)
	}
}

// A waiting repair never reaches further back than the store can reorganise.
func TestMaxRepairLagWithinTheStore(t *testing.T) {
	if core.MaxRepairLag > store.KeptStates {
		t.Fatalf("a repair may wait %d rounds back, the store reorganises %d", core.MaxRepairLag, store.KeptStates)
	}
}
