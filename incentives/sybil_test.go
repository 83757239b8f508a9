package incentives_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
	"github.com/lowband/lowband/verify"
)

// sybilRound is a round flooded by fresh identities: the most contributions a record takes,
// each from a new peer, and the most evidence, each against a new peer.
func sybilRound(fx *incentivestest.Fixture, round uint64, first int) ([]incentives.Contribution, []incentives.Evidence) {
	cs := make([]incentives.Contribution, 0, incentives.MaxContributions)
	for i := range incentives.MaxContributions {
		n := first + i
		cs = append(cs, incentives.Contribution{Peer: testPeer(n), Shards: [][]byte{verify.PayloadCID(fmt.Appendf(nil, "%d", n))}})
	}
	es := make([]incentives.Evidence, 0, incentives.MaxEvidencePerRecord)
	for i := range incentives.MaxEvidencePerRecord {
		es = append(es, *fx.InvalidContent(fmt.Sprintf("sybil-%d-%d", round, i), round, 0))
	}
	return cs, es
}

// TestSybilFloodKeepsStateBounded: round after round of new identities, the ledger never
// holds more than MaxAccounts accounts or encodes to more than MaxStateSize, its state
// decodes, and Build and Apply agree, in any arrival order.
func TestSybilFloodKeepsStateBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("floods the ledger")
	}
	fx := incentivestest.New("testnet", "run-1")
	chk := incentives.NewCheckCache(fx.Checker(), 1<<12)
	p, g := testParams()
	g.Stakes = []incentives.Stake{{Peer: testPeer(-1), Amount: 1000}}
	st, err := incentives.NewState(p, g)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	rounds := incentives.MaxAccounts/incentives.MaxContributions + 2
	for r := range rounds {
		cs, es := sybilRound(fx, st.Round, r*incentives.MaxContributions)
		cl, err := st.Build(cs, es, []byte("m"), chk)
		if err != nil {
			t.Fatalf("round %d: Build: %v", r, err)
		}
		if n := len(cl.State.Accounts); n > incentives.MaxAccounts {
			t.Fatalf("round %d: %d accounts, over the bound %d", r, n, incentives.MaxAccounts)
		}
		if r < rounds-1 {
			st = cl.State
			continue
		}
		// Over the bound: another arrival order builds the same record, Apply agrees, and
		// the state decodes.
		rng.Shuffle(len(cs), func(i, j int) { cs[i], cs[j] = cs[j], cs[i] })
		slices.Reverse(es)
		other, err := st.Build(cs, es, []byte("m"), chk)
		if err != nil || !bytes.Equal(other.Record.Marshal(), cl.Record.Marshal()) {
			t.Fatalf("round %d: another arrival order builds another record (%v)", r, err)
		}
		applied, _, err := st.Apply(cl.Record, chk)
		if err != nil || !applied.Equal(cl.State) {
			t.Fatalf("round %d: Apply of the built record: %v", r, err)
		}
		st = cl.State
		if _, err := incentives.DecodeState(st.Marshal()); err != nil {
			t.Fatalf("round %d: the ledger no longer decodes: %v", r, err)
		}
	}
	if st.Stake(testPeer(-1)) != 1000 {
		t.Fatal("the staked genesis account was dropped")
	}
}

// TestLargestLedgerFitsMaxStateSize: a ledger at every bound at once (most accounts, the
// longest names, the largest numbers, every remembered offence) still encodes under
// MaxStateSize and decodes, so no sequence of records can make the store unopenable.
func TestLargestLedgerFitsMaxStateSize(t *testing.T) {
	p, _ := testParams()
	p.EvidenceWindow = incentives.MaxEvidenceWindow
	st := &incentives.State{Version: incentives.StateVersion, Params: p, Round: ^uint64(0), Head: make([]byte, 32)}
	const big = ^uint64(0)
	for i := range incentives.MaxAccounts {
		st.Accounts = append(st.Accounts, incentives.Account{Peer: fmt.Sprintf("%0128d", i), Stake: big, Balance: big, JailedUntil: big, Offences: big, Contributions: big})
	}
	for i := range incentives.MaxEvidencePerRecord * (incentives.MaxEvidenceWindow + 1) {
		st.Seen = append(st.Seen, incentives.Offence{Kind: incentives.KindEquivocation, Peer: fmt.Sprintf("%0128d", i), Round: big, Index: ^uint32(0)})
	}
	enc := st.Marshal()
	if len(enc) > incentives.MaxStateSize {
		t.Fatalf("the largest ledger is %d bytes, over MaxStateSize %d", len(enc), incentives.MaxStateSize)
	}
	if _, err := incentives.DecodeState(enc); err != nil {
		t.Fatalf("the largest ledger does not decode: %v", err)
	}
	st.Accounts = append(st.Accounts, incentives.Account{Peer: "9"})
	if _, err := incentives.DecodeState(st.Marshal()); err == nil || !strings.Contains(err.Error(), "accounts, limit") {
		t.Fatalf("a ledger over MaxAccounts: %v", err)
	}
}

// BenchmarkBuildAllNewContributors closes a round whose MaxContributions contributions all
// come from peers a full ledger has never seen (account creation must not be quadratic).
func BenchmarkBuildAllNewContributors(b *testing.B) {
	fx := incentivestest.New("testnet", "run-1")
	st := genesis(b)
	chk := fx.Checker()
	for r := range incentives.MaxAccounts / incentives.MaxContributions {
		cs, _ := sybilRound(fx, st.Round, r*incentives.MaxContributions)
		cl, err := st.Build(cs, nil, []byte("m"), chk)
		if err != nil {
			b.Fatal(err)
		}
		st = cl.State
	}
	cs, _ := sybilRound(fx, st.Round, incentives.MaxAccounts)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := st.Build(cs, nil, []byte("m"), chk); err != nil {
			b.Fatal(err)
		}
	}
}
