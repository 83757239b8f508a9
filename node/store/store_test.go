package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
)

const testPeer = "12D3KooWEyoppNCUx8Yx66oV9fJnriXwCcXwDDUA2kj6vnc6iDEp"

func testGenesis(t testing.TB) *incentives.State {
	t.Helper()
	st, err := GenesisFromSpec(configs.IncentivesSpec{
		Stakes: map[string]uint64{testID("A"): 1000, testID("B"): 800}, MinStake: 100, Reward: 10,
		Penalties:  configs.PenaltySpec{Equivocation: 50, InvalidAttestation: 70, InvalidContent: 30},
		JailRounds: 2, UnstakedWeight: 0.25, EvidenceWindow: 3,
	})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// genRound is the deterministic content of round r: contributions from a few peers and,
// every fourth round, an equivocation.
func genRound(fx *incentivestest.Fixture, r uint64) ([]incentives.Contribution, []incentives.Evidence) {
	var cs []incentives.Contribution
	for i := range 4 {
		cs = append(cs, fx.Contribution(fmt.Sprintf("P%d", (int(r)+i)%6), r, 1+i))
	}
	var es []incentives.Evidence
	if r%4 == 3 {
		es = append(es, *fx.Equivocation(fmt.Sprintf("P%d", r%6), r, 0, "x"))
	}
	return cs, es
}

// commitRound builds round st.Round and commits it.
func commitRound(s *Store, fx *incentivestest.Fixture, chk incentives.EvidenceChecker) (*incentives.State, error) {
	st, err := s.State()
	if err != nil {
		return nil, err
	}
	cs, es := genRound(fx, st.Round)
	cl, err := st.Build(cs, es, []byte(fmt.Sprintf("model %d", st.Round)), chk)
	rec, next, events := cl.Record, cl.State, cl.Events
	if err != nil {
		return nil, err
	}
	return next, s.Commit(rec, next, events)
}

func TestCommitAndReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	fx := incentivestest.New("testnet", "run-1")
	chk := fx.Checker()
	s, err := Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.State(); !errors.Is(err, ErrNotInitialised) {
		t.Fatalf("empty store: %v", err)
	}
	g := testGenesis(t)
	if err := s.Init(g); err != nil {
		t.Fatal(err)
	}
	var last *incentives.State
	for range 8 {
		if last, err = commitRound(s, fx, chk); err != nil {
			t.Fatal(err)
		}
	}
	// A record that does not follow is refused and changes nothing.
	rec, _ := s.Record(2)
	if _, _, err := s.Apply(rec, chk); err == nil {
		t.Fatal("re-applying round 2 succeeded")
	}
	if err := s.Commit(rec, last, nil); !errors.Is(err, ErrConflict) {
		t.Fatalf("committing an old record: %v, want ErrConflict", err)
	}
	s.Close()

	s, err = Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Init(g); err != nil {
		t.Fatalf("Init with the same genesis: %v", err)
	}
	got, err := s.State()
	if err != nil || !got.Equal(last) {
		t.Fatalf("reopened state differs: %v", err)
	}
	// Replaying the stored records from genesis gives the stored state.
	st := g
	err = s.Records(0, func(r uint64, data []byte) error {
		rec, err := incentives.DecodeRecord(data)
		if err != nil {
			return err
		}
		st, _, err = st.Apply(rec, chk)
		return err
	})
	if err != nil || !st.Equal(last) {
		t.Fatalf("replay: %v", err)
	}
	h, err := s.History(incentivestest.PeerID("P3"))
	if err != nil || len(h) == 0 {
		t.Fatalf("history of P3: %v %v", h, err)
	}
	ev, _ := s.Record(3)
	if e, err := s.Evidence(ev.Evidence[0].ID()); err != nil || e == nil {
		t.Fatalf("evidence of round 3 not stored: %v", err)
	}
	other := testGenesis(t)
	other.Head[0] ^= 1
	if err := s.Init(other); !errors.Is(err, ErrGenesisMismatch) {
		t.Fatalf("Init with another genesis: %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "store.db")
	s, err := Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// bbolt's lock is per process on some systems; a second open from this process still
	// contends for the flock on Linux.
	if _, err := Open(path, 100*time.Millisecond); !errors.Is(err, ErrLocked) {
		t.Errorf("second open: %v, want ErrLocked", err)
	}
	s.Close()
	junk := filepath.Join(dir, "junk.db")
	if err := os.WriteFile(junk, make([]byte, 1<<14), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(junk, time.Second); !errors.Is(err, ErrCorrupt) {
		t.Errorf("junk file: %v, want ErrCorrupt", err)
	}
}

func TestParamsFromSpec(t *testing.T) {
	spec := configs.IncentivesSpec{Stakes: map[string]uint64{testID("B"): 2, testID("A"): 1}, UnstakedWeight: 0.3333335}
	p, g, err := ParamsFromSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	if p.UnstakedWeightPPM != 333334 || len(g.Stakes) != 2 || g.Stakes[0].Peer >= g.Stakes[1].Peer || g.Stakes[0].Amount+g.Stakes[1].Amount != 3 {
		t.Fatalf("got %+v %+v", p, g)
	}
	spec.UnstakedWeight = 1.5
	if _, _, err := ParamsFromSpec(spec); err == nil {
		t.Fatal("weight 1.5 accepted")
	}
}

// TestSpecValidation: the spec names the key of a bad incentives entry.
func TestSpecValidation(t *testing.T) {
	base := func() configs.Spec {
		return configs.Spec{Version: configs.SpecVersion, Name: "net", Run: "run-1", Training: configs.TrainingSpec{Task: "charlm"}}
	}
	good := base()
	good.Incentives.Stakes = map[string]uint64{testPeer: 10}
	if err := good.Validate(); err != nil {
		t.Fatalf("good spec: %v", err)
	}
	cases := []struct {
		key    string
		mutate func(s *configs.IncentivesSpec)
	}{
		{"incentives.stakes.not-a-peer", func(s *configs.IncentivesSpec) { s.Stakes = map[string]uint64{"not-a-peer": 1} }},
		{"incentives.stakes." + testPeer, func(s *configs.IncentivesSpec) { s.Stakes = map[string]uint64{testPeer: 0} }},
		{"incentives.unstaked_weight", func(s *configs.IncentivesSpec) { s.UnstakedWeight = -0.1 }},
		{"incentives.evidence_window", func(s *configs.IncentivesSpec) { s.EvidenceWindow = 1 << 40 }},
	}
	for _, c := range cases {
		s := base()
		c.mutate(&s.Incentives)
		var ke *configs.KeyError
		if err := s.Validate(); !errors.As(err, &ke) || ke.Key != c.key {
			t.Errorf("%s: got %v", c.key, err)
		}
	}
}
