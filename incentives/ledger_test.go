package incentives_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
	"github.com/lowband/lowband/verify"
)

func testParams() (incentives.Params, incentives.Genesis) {
	p := incentives.Params{MinStake: 100, Reward: 10, JailRounds: 2, UnstakedWeightPPM: 300000, EvidenceWindow: 3}
	p.Penalties[incentives.KindEquivocation] = 50
	p.Penalties[incentives.KindInvalidAttestation] = 70
	p.Penalties[incentives.KindInvalidContent] = 30
	g := incentives.Genesis{Stakes: []incentives.Stake{{Peer: incentivestest.PeerID("A"), Amount: 1000},
		{Peer: incentivestest.PeerID("B"), Amount: 800}, {Peer: incentivestest.PeerID("C"), Amount: 60}}}
	return p, g
}

func genesis(t testing.TB) *incentives.State {
	t.Helper()
	p, g := testParams()
	st, err := incentives.NewState(p, g)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// roundItems is the content of three rounds: contributions and evidence, including two
// different proofs of one offence and evidence that arrives in a later round.
func roundItems(fx *incentivestest.Fixture) ([][]incentives.Contribution, [][]incentives.Evidence) {
	peers := []string{pid("A"), pid("B"), pid("C"), pid("D"), pid("E")}
	var cs [][]incentives.Contribution
	for r := range 3 {
		var row []incentives.Contribution
		for i, p := range peers {
			row = append(row, fx.Contribution(p, uint64(r), 1+i%3))
		}
		cs = append(cs, row)
	}
	es := [][]incentives.Evidence{
		{*fx.Equivocation("B", 0, 0, "x"), *fx.Equivocation("B", 0, 0, "y"), *fx.InvalidContent("D", 0, 1)},
		{*fx.InvalidAttestation("C", 1, verify.ClassMeasurementNotAllowed), *fx.Equivocation("B", 0, 0, "z"), *fx.Equivocation("E", 1, 2, "x")},
		{*fx.InvalidContent("D", 1, 1), *fx.InvalidContent("D", 1, 1), *fx.Equivocation("A", 2, 0, "x")},
	}
	return cs, es
}

// TestOrderIndependence builds three rounds from contributions and evidence delivered in
// 1,000 random arrival orders and checks that every order ends at the same root, and that
// Apply of a record whose lists are shuffled gives the same state as its canonical form.
func TestOrderIndependence(t *testing.T) {
	fx := incentivestest.New("testnet", "run-1")
	// Nodes remember verdicts by evidence ID; so does this test, to keep 1,000 orders fast.
	chk := incentives.NewCheckCache(fx.Checker(), 1024)
	cs, es := roundItems(fx)
	want := buildAll(t, genesis(t), cs, es, chk)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 1000 {
		sc, se := shuffled(rng, cs), shuffled(rng, es)
		st := genesis(t)
		for r := range se {
			cl, err := st.Build(sc[r], se[r], []byte("model"), chk)
			rec, next, rejected := cl.Record, cl.State, cl.Rejected
			if err != nil || slices.ContainsFunc(rejected, func(x incentives.Rejected) bool { return !errors.Is(x.Err, incentives.ErrAlreadyPenalised) }) {
				t.Fatalf("order %d round %d: %v %v", i, r, err, rejected)
			}
			// The same record with its lists out of order applies to the same state.
			mixed := *rec
			mixed.Evidence, mixed.Contributions = shuffled(rng, [][]incentives.Evidence{rec.Evidence})[0], shuffled(rng, [][]incentives.Contribution{rec.Contributions})[0]
			again, _, err := st.Apply(&mixed, chk)
			if err != nil || !again.Equal(next) {
				t.Fatalf("order %d round %d: Apply of a shuffled record: %v", i, r, err)
			}
			st = next
		}
		if got := st.Root(); got != want {
			t.Fatalf("order %d: root %x, want %x", i, got, want)
		}
	}
}

func buildAll(t *testing.T, st *incentives.State, cs [][]incentives.Contribution, es [][]incentives.Evidence, chk incentives.EvidenceChecker) [32]byte {
	t.Helper()
	for r := range es {
		cl, err := st.Build(cs[r], es[r], []byte("model"), chk)
		next, events := cl.State, cl.Events
		if err != nil {
			t.Fatal(err)
		}
		// Build keeps one proof of each offence: the second proof of B's is left out.
		if r == 0 && (countKind(events, incentives.EventPenalty) != 2 || len(cl.Rejected) != 1) {
			t.Fatalf("round 0 events %+v, rejected %v: want 2 penalties and 1 proof left out", events, cl.Rejected)
		}
		st = next
	}
	b, d := st.Account(incentivestest.PeerID("B")), st.Account(incentivestest.PeerID("D"))
	if b.Offences != 1 || d.Offences != 2 {
		t.Fatalf("offences: B %d D %d, want 1 and 2", b.Offences, d.Offences)
	}
	return st.Root()
}

func countKind(events []incentives.Event, k incentives.EventKind) int {
	n := 0
	for _, e := range events {
		if e.Kind == k {
			n++
		}
	}
	return n
}

// shuffled returns a copy of rows with every row in a random order.
func shuffled[T any](rng *rand.Rand, rows [][]T) [][]T {
	out := make([][]T, len(rows))
	for i, row := range rows {
		out[i] = slices.Clone(row)
		rng.Shuffle(len(out[i]), func(a, b int) { out[i][a], out[i][b] = out[i][b], out[i][a] })
	}
	return out
}

// TestForgedEvidence: forged evidence proves nothing, whether Build filters it or a record
// carrying it reaches Apply, and nobody's account changes because of it.
func TestForgedEvidence(t *testing.T) {
	fx := incentivestest.New("testnet", "run-1")
	chk := fx.Checker()
	badSig := fx.Equivocation("B", 0, 0, "x")
	badSig.Headers[1].Sig = slices.Clone(badSig.Headers[1].Sig)
	badSig.Headers[1].Sig[10] ^= 0x80
	same := fx.Equivocation("B", 0, 0, "x")
	same.Headers[1] = same.Headers[0]
	cases := []struct {
		name  string
		round uint64 // rounds applied before the evidence is offered
		e     *incentives.Evidence
		want  error
	}{
		{"signature does not verify", 0, badSig, incentives.ErrBadEvidence},
		{"second shard identical to the first", 0, same, incentives.ErrMalformed},
		{"round outside the window", 5, fx.Equivocation("B", 1, 0, "x"), incentives.ErrOutsideWindow},
		{"round further ahead than the window", 0, fx.Equivocation("B", 4, 0, "x"), incentives.ErrOutsideWindow},
		{"bundle from an untrusted root", 0, fx.InvalidAttestation("B", 0, verify.ClassUntrustedRoot), incentives.ErrBadEvidence},
		{"framing: a refused report bound to someone else", 0, fx.InvalidAttestation("B", 0, verify.ClassBindingMismatch), incentives.ErrBadEvidence},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := genesis(t)
			for range c.round {
				st = mustBuild(t, st, nil, chk)
			}
			cl, err := st.Build(nil, []incentives.Evidence{*c.e}, nil, chk)
			rec, next, events, rejected := cl.Record, cl.State, cl.Events, cl.Rejected
			if err != nil || len(rejected) != 1 || !errors.Is(rejected[0].Err, c.want) {
				t.Fatalf("Build: err %v rejected %v, want one rejection with %v", err, rejected, c.want)
			}
			if len(rec.Evidence) != 0 || len(events) != 0 || !sameAccounts(st, next) {
				t.Fatalf("forged evidence changed the ledger: %+v", events)
			}
			rec.Evidence = []incentives.Evidence{*c.e}
			if _, _, err := st.Apply(rec, chk); !errors.Is(err, c.want) {
				t.Fatalf("Apply of a record with it: %v, want %v", err, c.want)
			}
		})
	}
}

func mustBuild(t testing.TB, st *incentives.State, es []incentives.Evidence, chk *incentives.Checker) *incentives.State {
	t.Helper()
	cl, err := st.Build(nil, es, nil, chk)
	next := cl.State
	if err != nil {
		t.Fatal(err)
	}
	return next
}

func sameAccounts(a, b *incentives.State) bool {
	return slices.Equal(a.Accounts, b.Accounts)
}

// TestApplyRefusesBrokenChain: wrong round, wrong previous root and a wrong new root are
// refused and leave the state as it was.
func TestApplyRefusesBrokenChain(t *testing.T) {
	fx := incentivestest.New("testnet", "run-1")
	chk := fx.Checker()
	st := genesis(t)
	cl, err := st.Build([]incentives.Contribution{fx.Contribution("A", 0, 1)}, nil, []byte("m"), chk)
	rec, next := cl.Record, cl.State
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := next.Apply(rec, chk); !errors.Is(err, incentives.ErrRoundOrder) {
		t.Errorf("replayed record: %v, want ErrRoundOrder", err)
	}
	for _, mutate := range []func(r *incentives.Record){
		func(r *incentives.Record) { r.PrevRoot = bytes.Repeat([]byte{1}, 32) },
		func(r *incentives.Record) { r.NewRoot = bytes.Repeat([]byte{1}, 32) },
		func(r *incentives.Record) { r.ModelRoot = []byte("other model") },
	} {
		bad := *rec
		mutate(&bad)
		if _, _, err := st.Apply(&bad, chk); !errors.Is(err, incentives.ErrRootMismatch) {
			t.Errorf("mutated record: %v, want ErrRootMismatch", err)
		}
	}
	if st.Round != 0 || st.Balance(incentivestest.PeerID("A")) != 0 {
		t.Fatal("a refused record changed the receiver")
	}
}

// TestCanonical: a stake-weighted majority decides; jailed and under-minimum peers have no vote.
func TestCanonical(t *testing.T) {
	st := genesis(t) // A 1000, B 800, C 60 (under the minimum: no power)
	x, y := []byte("root-x"), []byte("root-y")
	a, b, c := incentivestest.PeerID("A"), incentivestest.PeerID("B"), incentivestest.PeerID("C")
	if r, ok := st.Canonical(map[string][]byte{a: x, b: y, c: y}); !ok || !bytes.Equal(r, x) {
		t.Fatalf("A's 1000 of 1800 is a majority against B and C (800, C has none): got %q %v", r, ok)
	}
	if _, ok := st.Canonical(map[string][]byte{b: y, c: y, incentivestest.PeerID("Z"): y}); ok {
		t.Fatal("800 of 1800 is not a majority")
	}
}
