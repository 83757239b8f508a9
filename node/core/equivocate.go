package core

import (
	"github.com/lowband/lowband/incentives"
)

// keepSigned keeps the signed form of a peer's first record of round r: with a second,
// different one, the two are the evidence of a vote cast twice.
func (c *Core) keepSigned(r uint64, sr *incentives.SignedRecord) {
	if c.agree.signed[r] == nil {
		c.agree.signed[r] = map[string]*incentives.SignedRecord{}
	}
	c.agree.signed[r][sr.Signer] = sr
}

// equivocated drops the vote of sr's signer on round r, whose first record differs from
// sr: a signer that signed two records for one round counts in none of the round's
// tallies, whatever order they came in, so every node that holds both decides alike. The
// two records become record equivocation evidence (their digests and signatures, small
// whatever the records' size), pending for the next record and published. Later records
// of the signer for r are refused (ErrRecordDuplicate).
func (c *Core) equivocated(r uint64, sr *incentives.SignedRecord) []Message {
	first := c.agree.signed[r][sr.Signer]
	c.dropVote(r, sr.Signer)
	if first == nil {
		return nil // a vote seeded from storage: nothing signed to prove it with
	}
	ev, err := incentives.NewRecordEquivocation(first, sr)
	if err != nil {
		return nil
	}
	c.addEvidence(*ev)
	return []Message{{Kind: KindEvidence, Data: ev.Marshal()}}
}

// dropVote takes signer's vote on round r out of its tally for good.
func (c *Core) dropVote(r uint64, signer string) {
	delete(c.agree.votes[r], signer)
	delete(c.agree.signed[r], signer)
	delete(c.agree.tallies, r) // counted again without the vote
	if c.agree.twice[r] == nil {
		c.agree.twice[r] = map[string]bool{}
	}
	c.agree.twice[r][signer] = true
	c.agree.gen++
	c.agree.equivocations++
}

// recordEvidence drops the vote of the signer that record equivocation evidence e (checked
// by the caller) proves signed two records for a round of the window, as holding both
// records would, and decides that round again. Other evidence changes no vote.
func (c *Core) recordEvidence(e *incentives.Evidence) (Ready, error) {
	if e.Kind != incentives.KindRecordEquivocation {
		return Ready{}, nil
	}
	off, err := e.Claim()
	if err != nil {
		return Ready{}, nil // out of shape: no checker passes it
	}
	r := off.Round
	if r < c.repairFrom() || r > c.recordsUpTo() || c.agree.twice[r][off.Peer] || !c.voters()[off.Peer] {
		return Ready{}, nil // a key without a vote loses none: nothing is kept for it
	}
	c.dropVote(r, off.Peer)
	return c.redecide(r)
}

// prune forgets the signed votes and the double signers of rounds before from.
func (a *agreement) prune(from uint64) {
	for u := range a.signed {
		if u < from {
			delete(a.signed, u)
		}
	}
	for u := range a.twice {
		if u < from {
			delete(a.twice, u)
		}
	}
}
