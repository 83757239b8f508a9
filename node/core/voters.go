package core

import (
	"slices"

	"github.com/lowband/lowband/incentives"
)

// voterSet is the signers whose records the Core keeps, and the ledgers it was drawn from.
type voterSet struct {
	ledgers []*incentives.State
	set     map[string]bool
}

// voters returns the signers that may weigh in a round whose records the Core keeps: those
// with voting power in the ledger at the start of a round open to repair (which a repair
// may change, so a vote it would weigh is not lost) or in the ledger in force, and those
// whose power the next close may give back (stake enough, jail ending). A record's weight
// is its signer's power in the ledger at the start of its round (tally); this set only
// bounds what is kept, cheaply: the validators read it from the View before a signature
// is checked. The map is built anew when the ledgers change and is never modified after:
// callers must not modify it.
func (c *Core) voters() map[string]bool {
	ledgers := make([]*incentives.State, 0, len(c.agree.closed)+1)
	for u := c.repairFrom(); u < c.nextClose; u++ {
		if cr := c.agree.closed[u]; cr != nil {
			ledgers = append(ledgers, cr.ledger)
		}
	}
	ledgers = append(ledgers, c.ledger)
	if v := c.agree.voters; v.set != nil && slices.Equal(v.ledgers, ledgers) {
		return v.set
	}
	set := map[string]bool{}
	for _, led := range ledgers {
		for _, a := range led.Accounts {
			if led.Power(a.Peer) > 0 {
				set[a.Peer] = true
			}
		}
	}
	for _, a := range c.ledger.Accounts { // free again in the next round's ledger
		if a.Stake > 0 && a.Stake >= c.ledger.Params.MinStake && a.JailedUntil <= c.ledger.Round+1 {
			set[a.Peer] = true
		}
	}
	c.agree.voters = voterSet{ledgers: ledgers, set: set}
	return set
}
