package node

import (
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/p2p/p2ptest"
)

// TestLedgerNamesKeptAndBounded: the names appScore reads are each ID's own string, kept
// once made, and all dropped when there are more than maxNames.
func TestLedgerNamesKeptAndBounded(t *testing.T) {
	l := &ledger{}
	var ids []peer.ID
	for range 3 {
		id, _ := peer.IDFromPrivateKey(p2ptest.Key())
		ids = append(ids, id)
	}
	for range 2 {
		for _, id := range ids {
			if got := l.name(id); got != id.String() {
				t.Fatalf("name %q, want %q", got, id.String())
			}
		}
	}
	if n := l.nameN.Load(); n != 3 {
		t.Fatalf("%d names made for 3 peers asked twice", n)
	}
	l.nameN.Store(maxNames)
	other, _ := peer.IDFromPrivateKey(p2ptest.Key())
	if l.name(other) != other.String() || l.nameN.Load() != 1 {
		t.Fatalf("past the bound: %d names kept, want 1", l.nameN.Load())
	}
	if _, ok := l.names.Load(ids[0]); ok {
		t.Fatal("names kept past the bound")
	}
}
