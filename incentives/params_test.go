package incentives_test

import (
	"errors"
	"math"
	"testing"

	"github.com/lowband/lowband/incentives"
)

// TestUnboundedEvidenceWindowRefused: a window whose pruning arithmetic (round + window)
// would overflow, forgetting penalised offences at once, cannot start a ledger.
func TestUnboundedEvidenceWindowRefused(t *testing.T) {
	p, g := testParams()
	for _, w := range []uint64{math.MaxUint64, incentives.MaxEvidenceWindow + 1} {
		p.EvidenceWindow = w
		if _, err := incentives.NewState(p, g); !errors.Is(err, incentives.ErrBadParams) {
			t.Errorf("window %d: NewState gave %v, want ErrBadParams", w, err)
		}
	}
	p.EvidenceWindow = incentives.MaxEvidenceWindow
	if _, err := incentives.NewState(p, g); err != nil {
		t.Errorf("the largest window: %v", err)
	}
}
