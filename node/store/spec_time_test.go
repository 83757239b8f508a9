package store

import (
	"math"
	"testing"
	"time"

	"github.com/lowband/lowband/configs"
)

// TestEvidenceTimeIsAFunctionOfTheEpochNotTheClock: the checker built from a spec times
// every bundle by its epoch from the spec's genesis time, so a record replays to the same
// ledger whenever and wherever it is replayed.
func TestEvidenceTimeIsAFunctionOfTheEpochNotTheClock(t *testing.T) {
	spec, err := configs.ParseSpec("devnet", configs.DevnetSpec)
	if err != nil {
		t.Fatal(err)
	}
	chk, err := CheckerFromSpec(spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if chk.EpochTime == nil {
		t.Fatal("the checker has no time base: libraries would check certificates at the wall clock")
	}
	if chk.EpochRounds != spec.Attest.EpochRounds || chk.EpochRounds == 0 {
		t.Fatalf("checker epoch length %d rounds, spec says %d: a leaked key could speak in any round", chk.EpochRounds, spec.Attest.EpochRounds)
	}
	genesis, err := time.Parse(time.RFC3339, spec.Time.GenesisTime)
	if err != nil {
		t.Fatal(err)
	}
	epoch := time.Duration(spec.Attest.EpochRounds*spec.Time.RoundSeconds) * time.Second
	for _, e := range []uint64{0, 1, 7, 1000} {
		want := genesis.Add(time.Duration(e) * epoch)
		if got := chk.EpochTime(e); !got.Equal(want) {
			t.Errorf("epoch %d at %v, want %v", e, got, want)
		}
	}
	// A hostile epoch number saturates: no overflow back into the past, no panic.
	far := chk.EpochTime(math.MaxUint64)
	if !far.After(chk.EpochTime(1 << 20)) {
		t.Errorf("epoch 2^64-1 at %v, not after epoch 2^20 at %v", far, chk.EpochTime(1<<20))
	}
}
