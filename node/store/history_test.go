package store

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
)

// TestHistoryOfPeerNotInjectableByNULName: events of a peer whose name is another peer's
// name, a NUL byte and more never show in the other peer's history.
func TestHistoryOfPeerNotInjectableByNULName(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "ledger.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Init(testGenesis(t)); err != nil {
		t.Fatal(err)
	}
	fx := incentivestest.New("testnet", "run-1")
	st, _ := s.State()
	cl, err := st.Build([]incentives.Contribution{fx.Contribution("A", 0, 1)}, nil, []byte("m"), fx.Checker())
	if err != nil {
		t.Fatal(err)
	}
	forged := incentives.Event{Round: 0, Peer: testID("A") + "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00", Kind: incentives.EventPenalty, Amount: 999}
	if err := s.Commit(cl.Record, cl.State, append(cl.Events, forged)); err != nil {
		t.Fatal(err)
	}
	h, err := s.History(testID("A"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range h {
		if e.Peer != testID("A") {
			t.Fatalf("history of A holds an event of %q: %+v", e.Peer, e)
		}
	}
	if len(h) != 1 || h[0].Kind != incentives.EventReward {
		t.Fatalf("history of A: %+v, want its one reward", h)
	}
}

// TestSpecAndLedgerAgreeOnTheEvidenceWindow: every window the spec allows starts a ledger.
func TestSpecAndLedgerAgreeOnTheEvidenceWindow(t *testing.T) {
	if configs.MaxEvidenceWindow != incentives.MaxEvidenceWindow {
		t.Fatalf("spec allows %d rounds, ledger %d", configs.MaxEvidenceWindow, incentives.MaxEvidenceWindow)
	}
	if _, err := GenesisFromSpec(configs.IncentivesSpec{EvidenceWindow: configs.MaxEvidenceWindow}); err != nil {
		t.Fatal(err)
	}
}

// TestSpecAndLedgerAgreeOnGenesisSize: every genesis the spec allows starts a ledger.
func TestSpecAndLedgerAgreeOnGenesisSize(t *testing.T) {
	if configs.MaxGenesisStakes != incentives.MaxGenesisStakes {
		t.Fatalf("spec allows %d stakes, ledger %d", configs.MaxGenesisStakes, incentives.MaxGenesisStakes)
	}
}
