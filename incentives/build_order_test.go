package incentives_test

import (
	"fmt"
	"testing"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
)

// TestSelfAccusingFloodCannotStarveEvidenceAgainstStakedPeer: identities with nothing to
// lose (unstaked, no balance) can make valid evidence against themselves at no cost, in
// the oldest round of the window, every round. That flood must not keep evidence against a
// staked peer out of every record until it leaves the window: the staked peer would never
// be slashed.
func TestSelfAccusingFloodCannotStarveEvidenceAgainstStakedPeer(t *testing.T) {
	fx := incentivestest.New("testnet", "run-1")
	chk := incentives.NewCheckCache(fx.Checker(), 1<<14)
	st := genesis(t)
	w := st.Params.EvidenceWindow
	for st.Round < w { // the window reaches back w rounds from here on
		cl, err := st.Build(nil, nil, []byte("m"), chk)
		if err != nil {
			t.Fatal(err)
		}
		st = cl.State
	}
	target := *fx.Equivocation("A", st.Round, 0, "x") // A is staked
	sybils := lowerIDs(pid("A"), incentives.MaxEvidencePerRecord)
	pending := []incentives.Evidence{target}
	penalised := false
	for end := st.Round + w; st.Round <= end; {
		for _, sybil := range sybils {
			pending = append(pending, *fx.Equivocation(sybil, st.Round-w, uint32(st.Round), "x"))
		}
		cl, err := st.Build(nil, pending, []byte("m"), chk)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range cl.Events {
			if e.Kind == incentives.EventPenalty && e.Peer == pid("A") {
				penalised = true
			}
		}
		st, pending = cl.State, cl.Deferred
	}
	if !penalised {
		t.Fatalf("staked peer A never penalised: its evidence was deferred behind %d self-accusing sybils each round until it left the window of %d rounds",
			incentives.MaxEvidencePerRecord, w)
	}
}

// lowerIDs grinds n fixture names whose peer IDs sort before id, as an attacker grinds
// identities to win ties.
func lowerIDs(id string, n int) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		name := fmt.Sprintf("sybil-%d", i)
		if incentivestest.PeerID(name) < id {
			out = append(out, name)
		}
	}
	return out
}

// TestEvidenceOfTheNextRoundIsDeferredNotRejected: evidence about a round that has not
// closed yet (a peer equivocating in round r+1 while this node closes round r) is valid
// later. Build must hand it back for later rounds, not list it as left out for good, or a
// node keeping only Deferred loses it and the offence goes unpunished.
func TestEvidenceOfTheNextRoundIsDeferredNotRejected(t *testing.T) {
	fx := incentivestest.New("testnet", "run-1")
	chk := fx.Checker()
	st := genesis(t)
	next := *fx.Equivocation("A", st.Round+1, 0, "x")
	cl, err := st.Build(nil, []incentives.Evidence{next}, []byte("m"), chk)
	if err != nil {
		t.Fatal(err)
	}
	if len(cl.Deferred) != 1 {
		t.Fatalf("evidence of round %d while closing round %d: %d deferred, rejected %v", st.Round+1, st.Round, len(cl.Deferred), cl.Rejected)
	}
	cl, err = cl.State.Build(nil, cl.Deferred, []byte("m"), chk)
	if err != nil || len(cl.Record.Evidence) != 1 {
		t.Fatalf("the next round did not include the deferred evidence: %v, rejected %v", err, cl.Rejected)
	}
}
