package core

import (
	"bytes"
	"cmp"
	"slices"

	"github.com/lowband/lowband/incentives"
)

// tally is the weight behind each inclusion entry and evidence item of one round's votes,
// by one ledger's voting power. It is kept per round and grows with each vote, so deciding
// costs one pass over the distinct entries, not over every vote; a repair that changes the
// ledger of a round starts its tally again.
type tally struct {
	ledger  *incentives.State
	total   uint64 // weight of all the votes counted
	entries map[string]uint64
	byKey   map[string]incentives.Contribution
	items   map[incentives.ID]uint64
	byID    map[incentives.ID]incentives.Evidence
}

func newTally(led *incentives.State) *tally {
	return &tally{ledger: led, entries: map[string]uint64{}, byKey: map[string]incentives.Contribution{},
		items: map[incentives.ID]uint64{}, byID: map[incentives.ID]incentives.Evidence{}}
}

// add counts signer's vote rec at its voting power (nothing without power). Integer sums:
// the order votes come in does not matter.
func (t *tally) add(signer string, rec *incentives.Record) {
	p := t.ledger.Power(signer)
	if p == 0 {
		return
	}
	t.total = addSat(t.total, p)
	for _, e := range rec.Contributions {
		k := entryKey(e.Peer, e.Shards)
		e.Dropped = false // a vote's flag is its signer's claim: the close sets it again from the list
		t.entries[k], t.byKey[k] = addSat(t.entries[k], p), e
	}
	for _, e := range rec.Evidence {
		id := e.ID()
		t.items[id], t.byID[id] = addSat(t.items[id], p), e
	}
}

// canonical returns the entries (sorted by peer) and evidence items (sorted by ID) whose
// weight is strictly more than half of the total.
func (t *tally) canonical() ([]incentives.Contribution, []incentives.Evidence) {
	var list []incentives.Contribution
	for k, w := range t.entries {
		if w > t.total-w {
			list = append(list, t.byKey[k])
		}
	}
	slices.SortFunc(list, func(a, b incentives.Contribution) int { return cmp.Compare(a.Peer, b.Peer) })
	var ids []incentives.ID
	for id, w := range t.items {
		if w > t.total-w {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(a, b incentives.ID) int { return bytes.Compare(a[:], b[:]) })
	evidence := make([]incentives.Evidence, 0, len(ids))
	for _, id := range ids {
		evidence = append(evidence, t.byID[id])
	}
	return list, evidence
}

// open reports whether votes of m more voting power could change what canonical
// decides: whether an entry or evidence item would be in with all of them for it and out
// with all of them against it (2w + m > T >= 2w - m, for its weight w of the total T). An
// entry no vote names yet cannot get in on them when m < T, which holds once the votes
// counted carry a majority (m is at most what did not vote): the caller's case.
func (t *tally) open(m uint64) bool {
	if m == 0 {
		return false
	}
	tips := func(w uint64) bool {
		hi, lo := addSat(addSat(w, w), m), addSat(w, w)
		return hi > t.total && lo <= addSat(t.total, m)
	}
	for _, w := range t.entries {
		if tips(w) {
			return true
		}
	}
	for _, w := range t.items {
		if tips(w) {
			return true
		}
	}
	return false
}

// tallyOf returns round r's tally by led, counting every vote again when it was kept by
// another ledger (or not at all).
func (c *Core) tallyOf(r uint64, led *incentives.State) *tally {
	if t := c.agree.tallies[r]; t != nil && t.ledger == led {
		return t
	}
	t := newTally(led)
	for signer, rec := range c.agree.votes[r] {
		t.add(signer, rec)
	}
	c.agree.tallies[r] = t
	return t
}

func addSat(a, b uint64) uint64 {
	if a+b < a {
		return ^uint64(0)
	}
	return a + b
}
