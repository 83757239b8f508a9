package core

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
)

// TestTallyOpenAgainstCounting: open(m) says whether votes of m more power could change
// the canonical list; the reference counts it: the list with a vote of power m for every
// entry against the list with one for none. Random tallies of up to 8 voters and 6 entries.
func TestTallyOpenAgainstCounting(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const voters = 9 // the last one is the phantom voter of the reference
	var g incentives.Genesis
	peers := make([]string, voters)
	for i := range peers {
		peers[i] = incentivestest.PeerID(fmt.Sprint("v", i))
		g.Stakes = append(g.Stakes, incentives.Stake{Peer: peers[i], Amount: 1})
	}
	entries := make([]incentives.Contribution, 6)
	for i := range entries {
		entries[i] = incentives.Contribution{Peer: incentivestest.PeerID(fmt.Sprint("e", i)), Shards: [][]byte{{byte(i)}}}
	}
	names := func(list []incentives.Contribution) []string {
		var out []string
		for _, e := range list {
			out = append(out, e.Peer)
		}
		return out
	}
	for trial := range 2000 {
		amounts := make([]uint64, voters)
		for i := range g.Stakes {
			amounts[i] = 1 + rng.Uint64N(50)
			g.Stakes[i].Amount = amounts[i]
		}
		led, err := incentives.NewState(incentives.Params{Reward: 1}, g)
		if err != nil {
			t.Fatal(err)
		}
		votes := map[string]*incentives.Record{}
		for _, p := range peers[:1+rng.IntN(voters-1)] {
			rec := &incentives.Record{}
			for _, e := range entries {
				if rng.IntN(2) == 0 {
					rec.Contributions = append(rec.Contributions, e)
				}
			}
			votes[p] = rec
		}
		tallyWith := func(extra *incentives.Record) *tally {
			tl := newTally(led)
			for p, rec := range votes {
				tl.add(p, rec)
			}
			if extra != nil {
				tl.add(peers[voters-1], extra)
			}
			return tl
		}
		tl := tallyWith(nil)
		m := led.Power(peers[voters-1])
		base, _ := tl.canonical()
		// Only tallies with a majority of the power: open is asked of no other.
		if tl.total <= led.TotalPower()-tl.total {
			continue
		}
		forAll, _ := tallyWith(&incentives.Record{Contributions: entries}).canonical()
		forNone, _ := tallyWith(&incentives.Record{}).canonical()
		want := !slices.Equal(names(forAll), names(forNone))
		if got := tl.open(m); got != want {
			t.Fatalf("trial %d: open(%d) = %v with total %d and weights %v, want %v (lists %v and %v, now %v)",
				trial, m, got, tl.total, tl.entries, want, names(forAll), names(forNone), names(base))
		}
	}
}
