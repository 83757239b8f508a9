package store

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
	"github.com/lowband/lowband/verify"
)

// sybil is the canonical peer ID of fresh identity i.
func sybil(i int) string { return testID(fmt.Sprintf("sybil %d", i)) }

// testID is the canonical peer ID of the test peer called name (a hash as its Ed25519 key).
func testID(name string) string { return incentivestest.PeerID(name) }

// TestSybilFloodCannotBrickTheStore: records full of new identities (the most
// contributions, the most evidence, all from or against fresh peers) keep the store
// opening and taking records, past MaxAccounts.
func TestSybilFloodCannotBrickTheStore(t *testing.T) {
	if testing.Short() {
		t.Skip("floods the ledger")
	}
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Init(testGenesis(t)); err != nil {
		t.Fatal(err)
	}
	fx := incentivestest.New("testnet", "run-1")
	chk := incentives.NewCheckCache(fx.Checker(), 1<<12)
	for r := 0; r < incentives.MaxAccounts/incentives.MaxContributions+2; r++ {
		st, _ := s.State()
		var cs []incentives.Contribution
		for i := range incentives.MaxContributions {
			n := r*incentives.MaxContributions + i
			cs = append(cs, incentives.Contribution{Peer: sybil(n), Shards: [][]byte{verify.PayloadCID(fmt.Appendf(nil, "%d", n))}})
		}
		var es []incentives.Evidence
		for i := range incentives.MaxEvidencePerRecord {
			es = append(es, *fx.InvalidContent(fmt.Sprintf("sybil-%d-%d", r, i), st.Round, 0))
		}
		cl, err := st.Build(cs, es, []byte("m"), chk)
		if err != nil {
			t.Fatalf("round %d: Build: %v", r, err)
		}
		if err := s.Commit(cl.Record, cl.State, cl.Events); err != nil {
			t.Fatalf("round %d: Commit: %v", r, err)
		}
	}
	// The store still takes a record through Apply, and reopens.
	st, _ := s.State()
	cl, err := st.Build(nil, nil, []byte("m"), chk)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Apply(cl.Record, chk); err != nil {
		t.Fatalf("Apply after the flood: %v", err)
	}
	want, _ := s.State()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(path, time.Second)
	if err != nil {
		t.Fatalf("the store no longer opens after the flood: %v", err)
	}
	defer s.Close()
	got, err := s.State()
	if err != nil || !got.Equal(want) || len(got.Accounts) > incentives.MaxAccounts {
		t.Fatalf("reopened ledger: %d accounts, %v", len(got.Accounts), err)
	}
}
