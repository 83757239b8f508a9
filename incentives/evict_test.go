package incentives_test

import (
	"fmt"
	"testing"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
	"github.com/lowband/lowband/verify"
)

// TestFullLedgerCannotEvictAnActiveNewcomer: an attacker fills the ledger once with
// unstaked identities that contributed twice each. An honest newcomer contributing every
// round must keep its account and earn, not be dropped at the end of each round it
// contributes in (starting afresh every time and never earning more than one reward).
func TestFullLedgerCannotEvictAnActiveNewcomer(t *testing.T) {
	if testing.Short() {
		t.Skip("fills the ledger")
	}
	st := genesis(t)
	chk := incentivestest.New("testnet", "run-1").Checker()
	step := func(cs []incentives.Contribution) {
		t.Helper()
		cl, err := st.Build(cs, nil, []byte("m"), chk)
		if err != nil {
			t.Fatal(err)
		}
		st = cl.State
	}
	for first := 0; first < incentives.MaxAccounts; first += incentives.MaxContributions {
		cs := make([]incentives.Contribution, 0, incentives.MaxContributions)
		for n := first; n < first+incentives.MaxContributions; n++ {
			cs = append(cs, incentives.Contribution{Peer: testPeer(n), Shards: [][]byte{verify.PayloadCID(fmt.Appendf(nil, "%d", n))}})
		}
		step(cs)
		step(cs) // twice: each sybil has two contributions
	}
	honest := pid("newcomer")
	const rounds = 5
	for r := range rounds {
		step([]incentives.Contribution{{Peer: honest, Shards: [][]byte{verify.PayloadCID(fmt.Appendf(nil, "h%d", r))}}})
	}
	if a := st.Account(honest); a.Contributions != rounds {
		t.Fatalf("newcomer contributed in %d rounds in a row; its account shows %d contributions, balance %d (dropped at the end of each round)",
			rounds, a.Contributions, a.Balance)
	}
	// A contribution the aggregation rule dropped earns nothing and protects nothing: in
	// the full ledger its new account is the one that goes.
	filtered := pid("filtered")
	cl, err := st.Build([]incentives.Contribution{{Peer: filtered, Shards: [][]byte{verify.PayloadCID([]byte("f"))}, Dropped: true},
		{Peer: honest, Shards: [][]byte{verify.PayloadCID([]byte("h"))}}}, nil, []byte("m"), chk)
	if err != nil {
		t.Fatal(err)
	}
	var dropped []string
	for _, e := range cl.Events {
		if e.Kind == incentives.EventDrop {
			dropped = append(dropped, e.Peer)
		}
	}
	if len(dropped) != 1 || dropped[0] != filtered {
		t.Fatalf("a full ledger dropped %v for a filtered newcomer, want the filtered one", dropped)
	}
}
