package node

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestHeadWatchStrikes: a divergence stops the loop after strikes looks in a row (a repair
// in flight gets that long), a look that finds the node back on its peers' lineage starts
// the count again, and a divergence settled before the repair window, which no repair can
// end, stops it at the first look; behind stops it at once.
func TestHeadWatchStrikes(t *testing.T) {
	diverged := &resyncCause{why: resyncDiverged}
	settled := &resyncCause{why: resyncDiverged, settled: true}
	behind := &resyncCause{why: resyncBehind}
	for _, tc := range []struct {
		name  string
		looks []*resyncCause
		want  *resyncCause
		after int // looks taken when it stops
	}{
		{"diverged", []*resyncCause{diverged, diverged, diverged, diverged}, diverged, 3},
		{"diverged, back, diverged", []*resyncCause{diverged, diverged, nil, diverged, diverged, diverged}, diverged, 6},
		{"settled", []*resyncCause{settled}, settled, 1},
		{"diverged, then settled", []*resyncCause{diverged, settled}, settled, 2},
		{"behind", []*resyncCause{behind}, behind, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			lctx, stop := context.WithCancelCause(ctx)
			looks := 0
			probe := func(context.Context) *resyncCause {
				if looks == len(tc.looks) {
					t.Errorf("look %d: the watch should have stopped", looks+1)
					cancel()
					return nil
				}
				looks++
				return tc.looks[looks-1]
			}
			watchHead(lctx, stop, time.Millisecond, 3, probe)
			var got *resyncCause
			if !errors.As(context.Cause(lctx), &got) || got != tc.want || looks != tc.after {
				t.Fatalf("stopped with %v after %d looks, want %v after %d", context.Cause(lctx), looks, tc.want, tc.after)
			}
		})
	}
}
