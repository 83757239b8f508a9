package node

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/node/core"
	"github.com/lowband/lowband/p2p/p2ptest"
)

// TestRepairPersistedBeforeTheCommit: of a Ready with both, the loop persists the repair
// first, then the commit; a repair that cannot be persisted stops the loop with the error
// and nothing after it is persisted.
func TestRepairPersistedBeforeTheCommit(t *testing.T) {
	key := p2ptest.Key()
	self, _ := peer.IDFromPrivateKey(key)
	s := syntheticSpec(t, map[string]uint64{self.String(): 100})
	h := newLoopHarness(t, s, key, newFakeClock(), nil)
	rec := func(r uint64) *core.Commit {
		return &core.Commit{Record: &incentives.Record{Round: r}, State: &incentives.State{}}
	}
	rd := core.Ready{Repair: &core.Repair{From: 3, Commits: []*core.Commit{rec(3), rec(4)}}, Commit: rec(5)}
	if err := h.l.apply(context.Background(), rd); err != nil {
		t.Fatal(err)
	}
	if want := []string{"repair 3", "commit 5"}; !slices.Equal(h.persisted, want) {
		t.Fatalf("persisted %v, want %v", h.persisted, want)
	}
	h.persisted, h.repairErr = nil, errors.New("disk full")
	if err := h.l.apply(context.Background(), rd); !errors.Is(err, h.repairErr) {
		t.Fatalf("a repair that cannot be persisted: %v", err)
	}
	if want := []string{"repair 3"}; !slices.Equal(h.persisted, want) {
		t.Fatalf("persisted %v after a failed repair, want %v", h.persisted, want)
	}
}
