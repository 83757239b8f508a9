package store

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
)

// chain is a run of committed rounds from one ledger state: rounds[i] closes round
// base.Round+i.
type chain struct {
	base   *incentives.State
	rounds []Round
}

// head is the ledger state after the chain's last round.
func (c chain) head() *incentives.State {
	if len(c.rounds) == 0 {
		return c.base
	}
	return c.rounds[len(c.rounds)-1].State
}

// buildChain closes n rounds after base; variant v changes every round's contributions,
// evidence and model root, so two variants are two different chains from base.
func buildChain(t testing.TB, fx *incentivestest.Fixture, base *incentives.State, n, v int) chain {
	t.Helper()
	c := chain{base: base}
	st := base
	for range n {
		r := st.Round
		var cs []incentives.Contribution
		for i := range 3 {
			cs = append(cs, fx.Contribution(fmt.Sprintf("P%d", (int(r)+i+v)%6), r, 1+i+v%4))
		}
		var es []incentives.Evidence
		if (int(r)+v)%3 == 1 {
			es = append(es, *fx.Equivocation(fmt.Sprintf("P%d", (int(r)+v)%6), r, 0, fmt.Sprintf("x%d", v)))
		}
		cl, err := st.Build(cs, es, []byte(fmt.Sprintf("model %d variant %d", r, v)), fx.Checker())
		if err != nil {
			t.Fatal(err)
		}
		c.rounds = append(c.rounds, Round{Record: cl.Record, State: cl.State, Events: cl.Events})
		st = cl.State
	}
	return c
}

// commitChain commits every round of c, in order.
func commitChain(t testing.TB, s *Store, c chain) {
	t.Helper()
	for _, r := range c.rounds {
		if err := s.Commit(r.Record, r.State, r.Events); err != nil {
			t.Fatal(err)
		}
	}
}

// checkHolds fails unless s holds exactly the rounds of prefix then c: the ledger state,
// every record, the history of every peer named, the evidence of every record, and no
// record past the last round.
func checkHolds(t testing.TB, s *Store, prefix, c chain) {
	t.Helper()
	if err := holds(s, prefix, c); err != nil {
		t.Fatal(err)
	}
}

func holds(s *Store, prefix, c chain) error {
	all := append(slices.Clone(prefix.rounds), c.rounds...)
	st, err := s.State()
	if err != nil {
		return err
	}
	if !st.Equal(c.head()) {
		return fmt.Errorf("ledger at round %d is not the chain's head (round %d)", st.Round, c.head().Round)
	}
	want := map[string][]incentives.Event{}
	for _, r := range all {
		got, err := s.Record(r.Record.Round)
		if err != nil {
			return err
		}
		if got == nil || !bytes.Equal(got.Marshal(), r.Record.Marshal()) {
			return fmt.Errorf("record %d is not the chain's", r.Record.Round)
		}
		for _, e := range r.Record.Evidence {
			if got, err := s.Evidence(e.ID()); err != nil || got == nil {
				return fmt.Errorf("evidence %s of round %d not held: %v", e.ID(), r.Record.Round, err)
			}
		}
		for _, e := range r.Events {
			want[e.Peer] = append(want[e.Peer], e)
		}
	}
	if rec, err := s.Record(c.head().Round); err != nil || rec != nil {
		return fmt.Errorf("a record past the head (round %d) is held: %v", c.head().Round, err)
	}
	for i := range 6 {
		p := incentivestest.PeerID(fmt.Sprintf("P%d", i))
		h, err := s.History(p)
		if err != nil {
			return err
		}
		if !slices.EqualFunc(h, want[p], eventEqual) {
			return fmt.Errorf("history of P%d: %d events, want %d", i, len(h), len(want[p]))
		}
	}
	return nil
}

func eventEqual(a, b incentives.Event) bool {
	return a.Round == b.Round && a.Peer == b.Peer && a.Kind == b.Kind && a.Amount == b.Amount && bytes.Equal(a.Evidence, b.Evidence)
}

func openTestStore(t testing.TB) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Init(testGenesis(t)); err != nil {
		t.Fatal(err)
	}
	return s, path
}

// TestReorgReplacesTheRoundsFromItsFirst: rounds 3 to 6 of one chain are replaced by
// rounds 3 to 5 of another: records, evidence, history events and the ledger state are
// those of the first chain's rounds 0 to 2 then the second's, after a reopen too, and the
// evidence only the replaced rounds included is gone.
func TestReorgReplacesTheRoundsFromItsFirst(t *testing.T) {
	fx := incentivestest.New("testnet", "run-1")
	s, path := openTestStore(t)
	prefix := buildChain(t, fx, testGenesis(t), 3, 0)
	old := buildChain(t, fx, prefix.head(), 4, 0)
	commitChain(t, s, prefix)
	commitChain(t, s, old)
	repl := buildChain(t, fx, prefix.head(), 3, 1)
	if err := s.Reorg(3, repl.rounds...); err != nil {
		t.Fatalf("Reorg: %v", err)
	}
	checkHolds(t, s, prefix, repl)
	for _, r := range old.rounds {
		for _, e := range r.Record.Evidence {
			if got, _ := s.Evidence(e.ID()); got != nil && !inChain(repl, e.ID()) {
				t.Fatalf("evidence %s of replaced round %d still held", e.ID(), r.Record.Round)
			}
		}
	}
	s.Close()
	s, err := Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkHolds(t, s, prefix, repl)
	// The repaired head commits on as any other.
	next := buildChain(t, fx, repl.head(), 1, 2)
	commitChain(t, s, next)
}

func inChain(c chain, id incentives.ID) bool {
	for _, r := range c.rounds {
		for _, e := range r.Record.Evidence {
			if e.ID() == id {
				return true
			}
		}
	}
	return false
}

// TestReorgOfABrokenChainRefused: a replacement that does not start at from, does not
// follow the ledger of round from, skips a round, or gives a state its record does not
// lead to is ErrConflict, and the store is unchanged.
func TestReorgOfABrokenChainRefused(t *testing.T) {
	fx := incentivestest.New("testnet", "run-1")
	s, _ := openTestStore(t)
	defer s.Close()
	prefix := buildChain(t, fx, testGenesis(t), 3, 0)
	old := buildChain(t, fx, prefix.head(), 3, 0)
	commitChain(t, s, prefix)
	commitChain(t, s, old)
	repl := buildChain(t, fx, prefix.head(), 3, 1)
	other := buildChain(t, fx, old.rounds[0].State, 2, 1) // follows round 3 of the old chain
	badState := slices.Clone(repl.rounds)
	badState[1].State = old.rounds[1].State
	cases := map[string]struct {
		from   uint64
		rounds []Round
	}{
		"none":                   {3, nil},
		"wrong first round":      {2, repl.rounds},
		"not from the base":      {3, other.rounds},
		"a round skipped":        {3, []Round{repl.rounds[0], repl.rounds[2]}},
		"state not the record's": {3, badState},
		"past the head":          {7, buildChain(t, fx, old.head(), 1, 1).rounds},
	}
	for name, c := range cases {
		if err := s.Reorg(c.from, c.rounds...); !errors.Is(err, ErrConflict) {
			t.Errorf("%s: %v, want ErrConflict", name, err)
		}
		checkHolds(t, s, prefix, old)
	}
}

// TestReorgDeeperThanTheKeptStatesRefused: the store keeps the ledger states of the last
// KeptStates rounds; a reorg from before them is ErrConflict, and changes nothing.
func TestReorgDeeperThanTheKeptStatesRefused(t *testing.T) {
	fx := incentivestest.New("testnet", "run-1")
	s, _ := openTestStore(t)
	defer s.Close()
	all := buildChain(t, fx, testGenesis(t), KeptStates+2, 0)
	commitChain(t, s, all)
	head := all.head().Round
	deep := head - KeptStates - 1
	base := all.rounds[deep-1].State
	repl := buildChain(t, fx, base, int(head-deep), 1)
	if err := s.Reorg(deep, repl.rounds...); !errors.Is(err, ErrConflict) {
		t.Fatalf("reorg from round %d with head %d: %v, want ErrConflict", deep, head, err)
	}
	checkHolds(t, s, chain{}, all)
	oldest := head - KeptStates
	repl = buildChain(t, fx, all.rounds[oldest-1].State, int(head-oldest), 1)
	if err := s.Reorg(oldest, repl.rounds...); err != nil {
		t.Fatalf("reorg from round %d with head %d: %v", oldest, head, err)
	}
	checkHolds(t, s, chain{rounds: all.rounds[:oldest]}, repl)
}

// TestReorgFromGenesis: round 0 can be closed again: the genesis ledger is kept.
func TestReorgFromGenesis(t *testing.T) {
	fx := incentivestest.New("testnet", "run-1")
	s, _ := openTestStore(t)
	defer s.Close()
	commitChain(t, s, buildChain(t, fx, testGenesis(t), 2, 0))
	repl := buildChain(t, fx, testGenesis(t), 2, 1)
	if err := s.Reorg(0, repl.rounds...); err != nil {
		t.Fatal(err)
	}
	checkHolds(t, s, chain{}, repl)
}
