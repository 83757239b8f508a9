package node

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/node/checkpoint"
	"github.com/lowband/lowband/node/store"
	"github.com/lowband/lowband/p2p/p2ptest"
	"github.com/lowband/lowband/training/round"
)

// A training node makes a checkpoint after closing each round r with r+1 a multiple of
// CheckpointEvery, off the loop, and keeps the last CheckpointsKept: each kept one loads
// back from the store, verified, and its root is the NewRoot of the record the node
// committed for round Round-1; LastCheckpoint names the last one made.
func TestLoopMakesCheckpointsEveryKRoundsAndKeepsN(t *testing.T) {
	key := p2ptest.Key()
	self, _ := peer.IDFromPrivateKey(key)
	s := syntheticSpec(t, map[string]uint64{self.String(): 100}) // alone: each round closes at once
	h := newLoopHarness(t, s, key, newFakeClock(), nil)
	st, err := store.Open(filepath.Join(t.TempDir(), "ledger.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	k := newCheckpointer(2, 2, s.NetworkID(), s.Run, slog.New(slog.DiscardHandler))
	k.write = st.WriteCheckpoint
	h.l.ckpt = k

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- h.l.run(runCtx, round.State{Params: h.initial}) }()
	waitFor(t, ctx, func() bool { last := k.lastMade(); return last != nil && last.Round >= 6 })
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	list, err := st.Checkpoints()
	if err != nil {
		t.Fatal(err)
	}
	// A checkpoint due while the one before is still being stored replaces any still
	// waiting, so kept rounds are even but may be more than two apart on a busy machine.
	last := k.lastMade()
	var rounds []uint64
	for _, info := range list {
		rounds = append(rounds, info.Round)
	}
	if len(list) != 2 || rounds[1] != last.Round || rounds[0] >= rounds[1] || rounds[0]%2 != 0 || rounds[1]%2 != 0 {
		t.Fatalf("kept rounds %v, last made %d: want the last two made, at even rounds", rounds, last.Round)
	}
	lim := checkpointLimits(s, h.initial)
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, info := range list {
		c, _, err := st.LoadCheckpoint(info.Round, lim)
		if err != nil {
			t.Fatal(err)
		}
		root := c.Root()
		if rec := h.commits[info.Round-1].Record; rec.Round != info.Round-1 || !bytes.Equal(rec.NewRoot, root[:]) {
			t.Fatalf("checkpoint of round %d: root %x, record %d's NewRoot %x", info.Round, root, rec.Round, rec.NewRoot)
		}
	}
	if last.Root != hexRoot(list[1].Root) || last.Bytes != list[1].Size {
		t.Fatalf("LastCheckpoint %+v, stored %+v", last, list[1])
	}
}

// Two training nodes with checkpoints every 2 rounds each make, keep and announce them;
// one syncs the other's latest checkpoint through the DHT and the fetch protocol, and it
// is the state both hold: the same root as its own checkpoint of that round.
func TestSwarmNodesMakeServeAndSyncCheckpoints(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	nodes, _, _ := startSwarmWith(t, ctx, 2, func(s *configs.Spec) {
		s.Agreement.CheckpointEvery, s.Agreement.CheckpointsKept = 2, configs.MaxCheckpointsKept // kept while the test syncs
	}, nil)
	a, b := nodes[0], nodes[1]
	waitFor(t, ctx, func() bool {
		la, lb := a.LastCheckpoint(), b.LastCheckpoint()
		return la != nil && lb != nil && la.Round >= 4 && lb.Round >= 4
	})
	info, err := a.ledger.st.LatestCheckpoint()
	if err != nil {
		t.Fatal(err)
	}
	own, err := b.ledger.st.CheckpointAt(info.Round)
	if err != nil {
		t.Fatal(err)
	}
	if own.Root != info.Root {
		t.Fatalf("round %d: the nodes' checkpoints have roots %x and %x", info.Round, info.Root, own.Root)
	}
	for _, want := range []ckptWant{{Root: info.Root, ID: info.ID}, {Root: info.Root}} {
		var c *checkpoint.Checkpoint
		var lastErr error
		err := p2ptest.Poll(ctx, "a checkpoint synced", 200*time.Millisecond, func() bool {
			c, lastErr = b.syncCheckpoint(ctx, want)
			return lastErr == nil
		})
		if err != nil {
			t.Fatalf("%v; last: %v", err, lastErr)
		}
		if c.Round != info.Round || c.Root() != info.Root {
			t.Fatalf("synced round %d root %x, want %d %x", c.Round, c.Root(), info.Round, info.Root)
		}
	}
}

// A checkpoint whose root is not the committed record's NewRoot is not stored: everyone
// who fetched it would refuse it.
func TestCheckpointNotOfTheCommittedRootNotStored(t *testing.T) {
	k := newCheckpointer(2, 2, p2ptest.Network, p2ptest.Run, slog.New(slog.DiscardHandler))
	stored := 0
	k.write = func(c *checkpoint.Checkpoint, _ []byte, _ int) (*checkpoint.Manifest, error) {
		stored++
		m, _ := checkpoint.Split(c, 0)
		return m, nil
	}
	c := syncCheckpoint(t, 1)
	wrong := c.Root()
	wrong[0] ^= 1
	k.make(context.Background(), ckptJob{c: c, want: wrong})
	if stored != 0 || k.lastMade() != nil {
		t.Fatalf("stored %d, last made %+v", stored, k.lastMade())
	}
	k.make(context.Background(), ckptJob{c: c, want: c.Root()})
	if stored != 1 || k.lastMade() == nil || k.lastMade().Root != hexRoot(c.Root()) {
		t.Fatalf("the right one: stored %d, last made %+v", stored, k.lastMade())
	}
}
