package incentives_test

import (
	"errors"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
)

// cidForm is peer's ID written in its other text form, CIDv1.
func cidForm(t *testing.T, p string) string {
	t.Helper()
	id, err := peer.Decode(p)
	if err != nil {
		t.Fatal(err)
	}
	return peer.ToCid(id).String()
}

// TestPeerInAnotherIDFormHoldsNoSecondAccount: records and genesis name peers only in the
// canonical form, so one peer cannot earn or hold stake under two names.
func TestPeerInAnotherIDFormHoldsNoSecondAccount(t *testing.T) {
	fx := incentivestest.New("testnet", "run-1")
	p, _ := testParams()
	alias := cidForm(t, testPeer(1))
	if _, err := incentives.NewState(p, incentives.Genesis{Stakes: []incentives.Stake{{Peer: alias, Amount: 5}}}); !errors.Is(err, incentives.ErrBadParams) {
		t.Errorf("genesis stake under a CID-form name: %v, want ErrBadParams", err)
	}
	st, err := incentives.NewState(p, incentives.Genesis{Stakes: []incentives.Stake{{Peer: testPeer(1), Amount: 5}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{alias, "alice"} {
		c := fx.Contribution("1", 0, 1)
		c.Peer = name // the same shards, named by a non-canonical form
		if _, err := st.Build([]incentives.Contribution{c}, nil, nil, fx.Checker()); !errors.Is(err, incentives.ErrMalformed) {
			t.Errorf("contribution under %q: Build gave %v, want ErrMalformed", name, err)
		}
		rec := &incentives.Record{Version: incentives.RecordVersion, Round: 0, PrevRoot: st.Head, NewRoot: make([]byte, 32), Contributions: []incentives.Contribution{c}}
		if _, err := incentives.DecodeRecord(rec.Marshal()); !errors.Is(err, incentives.ErrMalformed) {
			t.Errorf("record with a contribution under %q decodes: %v", name, err)
		}
	}
}
