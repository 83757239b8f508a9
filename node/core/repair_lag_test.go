package core_test

import (
	"testing"

	"github.com/lowband/lowband/node/core"
)

// TestRepairLag: a waiting repair keeps twice the depth open, at most MaxRepairLag, and
// never fewer rounds than the depth itself: at the cap's edge (8: twice is the cap), past
// it (9 to 16: capped) and beyond what a spec allows (the depth wins).
func TestRepairLag(t *testing.T) {
	for _, tc := range []struct{ depth, lag uint64 }{
		{0, 0}, {1, 2}, {2, 4}, {3, 6}, {7, 14},
		{core.MaxRepairLag/2 - 1, core.MaxRepairLag - 2},
		{core.MaxRepairLag / 2, core.MaxRepairLag},
		{core.MaxRepairLag/2 + 1, core.MaxRepairLag},
		{core.MaxRepairLag - 1, core.MaxRepairLag},
		{core.MaxRepairLag, core.MaxRepairLag},
		{core.MaxRepairLag + 1, core.MaxRepairLag + 1},
		{100, 100},
	} {
		if got := core.RepairLag(tc.depth); got != tc.lag {
			t.Errorf("depth %d: lag %d, want %d", tc.depth, got, tc.lag)
		}
	}
}
