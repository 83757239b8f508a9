package store

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lowband/lowband/incentives/incentivestest"
)

const reorgCrashEnv = "LOWBAND_STORE_REORG_CRASH_CHILD"

// reorgVariant is the chain the crash child's reorg v leaves after the common prefix:
// 2 to 4 rounds, each of the variants v%reorgVariants different.
func reorgVariant(t testing.TB, fx *incentivestest.Fixture, prefix chain, v int) chain {
	v %= reorgVariants
	return buildChain(t, fx, prefix.head(), 2+v%3, v)
}

// reorgVariants is how many different variants the crash child cycles through: built
// before it starts, so that it spends its time in Reorg, where the kills should land.
const reorgVariants = 6

// reorgPrefix is the 3 rounds every variant of the crash test follows.
func reorgPrefix(t testing.TB, fx *incentivestest.Fixture) chain {
	return buildChain(t, fx, testGenesis(t), 3, 0)
}

// TestReorgCrashChild is the child of TestReorgCrash: on a fresh store it commits the
// prefix and variant 0, then replaces the rounds after the prefix by variant 1, 2, ...
// until it is killed, printing "committed v" once Reorg to variant v has returned.
func TestReorgCrashChild(t *testing.T) {
	path := os.Getenv(reorgCrashEnv)
	if path == "" {
		t.Skip("run by TestReorgCrash")
	}
	fail := func(err error) {
		fmt.Println("error", err)
		os.Exit(2)
	}
	s, err := Open(path, 5*time.Second)
	if err != nil {
		fail(err)
	}
	if err := s.Init(testGenesis(t)); err != nil {
		fail(err)
	}
	fx := incentivestest.New("testnet", "run-1")
	prefix := reorgPrefix(t, fx)
	commitChain(t, s, prefix)
	var variants []chain
	for v := range reorgVariants {
		variants = append(variants, reorgVariant(t, fx, prefix, v))
	}
	commitChain(t, s, variants[0])
	fmt.Println("committed 0")
	for v := 1; ; v++ {
		if err := s.Reorg(3, variants[v%reorgVariants].rounds...); err != nil {
			fail(err)
		}
		fmt.Println("committed", v)
	}
}

// TestReorgCrash kills a child that reorganises its store over and over with SIGKILL at
// random moments. The reopened store must hold the prefix and then either the variant
// the child last reported or the next one, whole: records, evidence, history and ledger,
// never a mix of the two.
func TestReorgCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	fx := incentivestest.New("testnet", "run-1")
	prefix := reorgPrefix(t, fx)
	rng := rand.New(rand.NewPCG(11, 11))
	deadline := time.Now().Add(20 * time.Second)
	checked := 0
	for kills := 0; kills < 8 && time.Now().Before(deadline); kills++ {
		path := filepath.Join(t.TempDir(), fmt.Sprintf("store-%d.db", kills))
		reported := killChild(t, "TestReorgCrashChild", reorgCrashEnv, path, time.Duration(300+rng.IntN(700))*time.Millisecond)
		if reported < 0 {
			continue // killed before variant 0 was whole
		}
		s, err := Open(path, 5*time.Second)
		if err != nil {
			t.Fatalf("kill %d: reopening: %v", kills, err)
		}
		v := int(reported)
		errReported := holds(s, prefix, reorgVariant(t, fx, prefix, v))
		errNext := holds(s, prefix, reorgVariant(t, fx, prefix, v+1))
		s.Close()
		if errReported != nil && errNext != nil {
			t.Fatalf("kill %d: child reported variant %d: the store holds neither it (%v) nor the next (%v)", kills, v, errReported, errNext)
		}
		t.Logf("kill %d: child reported variant %d, store holds variant %d", kills, v, v+map[bool]int{true: 0, false: 1}[errReported == nil])
		checked++
	}
	if checked < 5 {
		t.Fatalf("only %d kills after a reorg in the time allowed", checked)
	}
}
