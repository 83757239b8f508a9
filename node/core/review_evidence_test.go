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

// Evidence can be large (an invalid-content item carries the payload): what is pending is
// bounded in bytes too, so one key signing large payloads that fail the content checks
// cannot make a node hold a thousand of them.
func TestPendingEvidenceBoundedInBytes(t *testing.T) {
	c, _ := tinyCore(t)
	c.cfg.MaxPendingEvidenceBytes = 1 << 20
	fx := incentivestest.New("capnet", "run")
	b := fx.Bundle("attacker", "")
	for i := range 8 {
		payload := append([]byte("bad"), make([]byte, 256<<10)...)
		e := incentives.NewInvalidContent(b, fx.Shard("attacker", b, 0, uint32(i), payload))
		if _, err := c.Evidence(e); err != nil {
			t.Fatal(err)
		}
	}
	total := 0
	for i := range c.pending {
		total += len(c.pending[i].Marshal())
	}
	if total > c.cfg.MaxPendingEvidenceBytes || len(c.pending) == 0 {
		t.Fatalf("%d evidence items of %d bytes pending, bound %d bytes", len(c.pending), total, c.cfg.MaxPendingEvidenceBytes)
	}
}
