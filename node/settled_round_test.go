package node

import (
	"math"
	"testing"
)

// TestSettledRound: the round a settled divergence is judged at is the latest that
// neither a peer at head r, whose waiting repair may close rounds from r + 1 − lag on
// (lag = max(d, min(2d, core.MaxRepairLag))), nor this node, whose window starts at
// repairFrom, can still close again: min(r − lag, repairFrom − 1); none while r is below
// the lag or the node's window starts at genesis. Rows at the lag, one less and one more,
// for depths 0 and 1, the default 3, twice the depth at the cap (8), the cap taking over
// (9, 16) and a depth beyond it (20, which no spec allows: the depth wins).
func TestSettledRound(t *testing.T) {
	const top = math.MaxUint64
	for _, tc := range []struct {
		depth, r, repairFrom uint64
		want                 uint64
		ok                   bool
	}{
		{depth: 0, r: 0, repairFrom: 1, want: 0, ok: true},
		{depth: 0, r: 5, repairFrom: 3, want: 2, ok: true},
		{depth: 0, r: 0, repairFrom: 0},
		{depth: 1, r: 1, repairFrom: 10},
		{depth: 1, r: 2, repairFrom: 10, want: 0, ok: true},
		{depth: 1, r: 3, repairFrom: 10, want: 1, ok: true},
		{depth: 3, r: 5, repairFrom: 10},
		{depth: 3, r: 6, repairFrom: 10, want: 0, ok: true},
		{depth: 3, r: 7, repairFrom: 10, want: 1, ok: true},
		{depth: 3, r: 7, repairFrom: 1, want: 0, ok: true}, // its own window reaches further back
		{depth: 3, r: 7, repairFrom: 0},
		{depth: 3, r: 100, repairFrom: 97, want: 94, ok: true},
		{depth: 3, r: 100, repairFrom: 90, want: 89, ok: true},
		{depth: 8, r: 15, repairFrom: 100},
		{depth: 8, r: 16, repairFrom: 100, want: 0, ok: true},
		{depth: 8, r: 17, repairFrom: 100, want: 1, ok: true},
		{depth: 9, r: 15, repairFrom: 100},
		{depth: 9, r: 16, repairFrom: 100, want: 0, ok: true}, // 2·9 = 18, capped at 16
		{depth: 9, r: 17, repairFrom: 100, want: 1, ok: true},
		{depth: 16, r: 15, repairFrom: 100},
		{depth: 16, r: 16, repairFrom: 100, want: 0, ok: true},
		{depth: 16, r: 40, repairFrom: 30, want: 24, ok: true},
		{depth: 20, r: 19, repairFrom: 100},
		{depth: 20, r: 20, repairFrom: 100, want: 0, ok: true},
		{depth: 3, r: top, repairFrom: top, want: top - 6, ok: true},
	} {
		got, ok := settledRound(tc.r, tc.repairFrom, tc.depth)
		if ok != tc.ok || got != tc.want {
			t.Errorf("depth %d, head %d, window from %d: %d %v, want %d %v", tc.depth, tc.r, tc.repairFrom, got, ok, tc.want, tc.ok)
		}
	}
}
