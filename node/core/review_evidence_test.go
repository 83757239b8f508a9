package core

import (
	"fmt"
	"testing"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
)

// One attested key can sign any number of valid, distinct evidence items against itself
// (an equivocation per shard index). Flooding them must not push evidence against another
// peer out of what the next record includes.
func TestEvidenceFloodByOnePeerKeepsEvidenceAgainstOthers(t *testing.T) {
	c, _ := tinyCore(t)
	c.cfg.MaxPendingEvidence = 4
	fx := incentivestest.New("capnet", "run")
	victim := fx.Equivocation("x", 0, 0, "v")
	if _, err := c.Evidence(victim); err != nil {
		t.Fatal(err)
	}
	for i := range 3 * c.cfg.MaxPendingEvidence {
		if _, err := c.Evidence(fx.Equivocation("attacker", 0, uint32(i), fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	sum := closeRound0(t, c)
	if !recordHas(c, victim) {
		t.Fatalf("the record of round 0 (%d evidence items) lacks the evidence against x", sum.Evidence)
	}
}

// recordHas reports whether the last record built holds e (the ledger saw its offence).
func recordHas(c *Core, e *incentives.Evidence) bool {
	off, err := c.cfg.Checker.Check(e)
	if err != nil {
		return false
	}
	for _, o := range c.ledger.Seen {
		if o == off {
			return true
		}
	}
	return false
}
