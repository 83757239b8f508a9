package core

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
	"github.com/lowband/lowband/training/round"
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

// TestPendingVotesAreThoseOnTheirWay: the votes of round u on their way are those of the
// signers with a vote of a later round and none of u: not this node's own (a round it was
// seeded with may have none, for good), not a signer that voted u, nor one whose vote of u
// was dropped (two records). The answer follows the votes as they change.
func TestPendingVotesAreThoseOnTheirWay(t *testing.T) {
	names := []string{"self", "p1", "p2", "p3", "p4", "p5"}
	ids := map[string]string{}
	var g incentives.Genesis
	for i, n := range names {
		ids[n] = incentivestest.PeerID(n)
		g.Stakes = append(g.Stakes, incentives.Stake{Peer: ids[n], Amount: uint64(1) << i})
	}
	led, err := incentives.NewState(incentives.Params{Reward: 1}, g)
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(tinyConfig(ids["self"]), round.State{Params: tinyTheta()}, led)
	if err != nil {
		t.Fatal(err)
	}
	vote := func(r uint64, who ...string) {
		if c.agree.votes[r] == nil {
			c.agree.votes[r] = map[string]*incentives.Record{}
		}
		for _, n := range who {
			c.agree.votes[r][ids[n]] = &incentives.Record{Round: r}
		}
		c.agree.gen++
	}
	vote(4, "p1")
	c.agree.twice[4] = map[string]bool{ids["p3"]: true}
	vote(5, "self", "p1", "p2")
	vote(6, "p3", "p4")
	vote(3, "p5") // an earlier round says nothing of round 4
	if got, want := c.pendingVotes(4, led), led.Power(ids["p2"])+led.Power(ids["p4"]); got != want {
		t.Fatalf("pending power %d, want p2's and p4's, %d", got, want)
	}
	vote(4, "p2")
	if got, want := c.pendingVotes(4, led), led.Power(ids["p4"]); got != want {
		t.Fatalf("after p2's vote of round 4 came: pending power %d, want p4's, %d", got, want)
	}
}
