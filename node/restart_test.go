package node

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/node/store"
	"github.com/lowband/lowband/p2p/p2ptest"
)

// restartSwarm is a bootstrap node and n training nodes on one generated spec with short
// deadlines (a restarted node waits for the deadline in the rounds it skips) and a local
// state saved every other round. The last node runs until its stop is called.
type restartSwarm struct {
	spec   *configs.Spec
	homes  []configs.Home
	cfgs   []*configs.Config
	nodes  []*Node
	stop   func() // stops the last node and waits for it
	bootMA string
}

func startRestartSwarm(t *testing.T, ctx context.Context, n int) *restartSwarm {
	t.Helper()
	rs := &restartSwarm{homes: make([]configs.Home, n), cfgs: make([]*configs.Config, n)}
	ids := make([]string, n)
	for i := range rs.homes {
		rs.homes[i], rs.cfgs[i], _ = newHome(t)
		key, err := rs.homes[i].LoadIdentity()
		if err != nil {
			t.Fatal(err)
		}
		id, _ := peer.IDFromPrivateKey(key)
		ids[i] = id.String()
	}
	rs.spec = swarmSpec(t, ids)
	rs.spec.Round = configs.RoundSpec{DeadlineMin: 1, DeadlineMax: 4}
	rs.spec.Agreement.CheckpointEvery = 2
	if err := rs.spec.Validate(); err != nil {
		t.Fatal(err)
	}
	bh, bc, _ := newHome(t)
	boot := runNode(t, ctx, Options{Home: bh, Config: bc, Spec: rs.spec, Role: configs.RoleBootstrap})
	rs.bootMA = fmt.Sprintf("%s/p2p/%s", boot.host.Addrs()[0], boot.ID())
	for i := range rs.homes {
		rs.cfgs[i].P2P.Bootstrap = []string{rs.bootMA}
		if i < n-1 {
			rs.nodes = append(rs.nodes, runNode(t, ctx, Options{Home: rs.homes[i], Config: rs.cfgs[i], Spec: rs.spec}))
		}
	}
	rs.startLast(t, ctx)
	return rs
}

// startLast starts (again) the last node on its home. It returns the node and, read
// before it runs, its first open round and the state root of the round before.
func (rs *restartSwarm) startLast(t *testing.T, ctx context.Context) (*Node, uint64, string) {
	t.Helper()
	i := len(rs.homes) - 1
	n, err := New(ctx, Options{Home: rs.homes[i], Config: rs.cfgs[i], Spec: rs.spec, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	c := n.train.loop.core
	next, model := c.View().NextClose, c.ModelRoot()
	var root [32]byte
	if next > 0 { // the ledger computes a round's root with the head of the round before
		rec, err := n.ledger.st.Record(next - 1)
		if err != nil {
			t.Fatal(err)
		}
		led := *c.Ledger()
		led.Head = rec.PrevRoot
		root = incentives.StateRoot(next-1, model[:], led.Root())
		if n.train.loop.train.inner.Steps() == 0 || len(c.Local().Codec.Tensors) == 0 {
			t.Errorf("resumed at round %d without its local state (inner steps %d)", next, n.train.loop.train.inner.Steps())
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	stopped := false
	rs.stop = func() {
		if !stopped {
			stopped = true
			cancel()
			if err := <-done; err != nil {
				t.Errorf("node %s: %v", n.ID(), err)
			}
		}
	}
	t.Cleanup(rs.stop)
	if len(rs.nodes) == i {
		rs.nodes = append(rs.nodes, n)
	} else {
		rs.nodes[i] = n
	}
	return n, next, hex.EncodeToString(root[:])
}

// closedRounds waits until n has closed at least k rounds since it started.
func closedRounds(t *testing.T, ctx context.Context, n *Node, k int) *TrainingStatus {
	t.Helper()
	var st *TrainingStatus
	if err := p2ptest.Poll(ctx, fmt.Sprintf("%d rounds closed", k), 50*time.Millisecond, func() bool {
		st = n.trainingStatus()
		return len(st.Rounds) >= k
	}); err != nil {
		t.Fatal(err)
	}
	return st
}

// storedRoots reads the state root of every record a home's store holds, and its ledger.
func storedRoots(t *testing.T, h configs.Home) ([]string, *incentives.State) {
	t.Helper()
	s, err := store.Open(h.StorePath(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var roots []string
	err = s.Records(0, func(r uint64, data []byte) error {
		rec, err := incentives.DecodeRecord(data)
		if err != nil {
			return err
		}
		roots = append(roots, hex.EncodeToString(rec.NewRoot))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	led, err := s.State()
	if err != nil {
		t.Fatal(err)
	}
	return roots, led
}

// TestRestartResumesAtTheCommittedRound: in a swarm of three, one node stopped after a few
// rounds and started again on the same home resumes at its last committed round with the
// state root it committed for it, keeps every round it committed, and goes on closing
// rounds, contributing again from the second round after it (it may have signed shards
// of the two before it stopped). Copies of its home with a shard or record changed on disk
// do not start, with an error naming the round.
func TestRestartResumesAtTheCommittedRound(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	rs := startRestartSwarm(t, ctx, 3)
	last := len(rs.nodes) - 1
	before := closedRounds(t, ctx, rs.nodes[last], 4)
	rs.stop()
	roots, led := storedRoots(t, rs.homes[last])
	if uint64(len(roots)) != led.Round || led.Round < 4 {
		t.Fatalf("%d records for a ledger at round %d", len(roots), led.Round)
	}
	logged := before.Rounds
	for _, r := range logged {
		if r.Round < uint64(len(roots)) && r.StateRoot != roots[r.Round] {
			t.Fatalf("round %d: logged state root %s, stored %s", r.Round, r.StateRoot, roots[r.Round])
		}
	}

	checkTamperedHomesRefused(t, ctx, rs.homes[last], rs.cfgs[last], rs.spec)
	checkResumeSeedsRepairWindow(t, rs.homes[last], rs.spec)

	h0 := lowHead(rs.nodes[:last])
	n, next, root := rs.startLast(t, ctx)
	if next != led.Round || root != roots[led.Round-1] {
		t.Fatalf("resumed at round %d with state root %s, want round %d with %s", next, root, led.Round, roots[led.Round-1])
	}
	checkBackOnTheirRoots(t, ctx, n, rs.nodes[:last], h0)
	after := closedRounds(t, ctx, n, 3)
	// From round next+2 the node trains again. Before it, it signs nothing new (core's
	// TestResumedCoreSignsNoShardOfTheRoundsItSkips), but what it signed before it stopped
	// may be included: its peers hold it, and a repair takes it back.
	// A catch-up to peers that moved on while it was stopped moves its first local round
	// on with it.
	first := max(next+2, n.train.firstLocal.Load())
	for _, r := range after.Rounds[:3] {
		if own := slices.Contains(r.Included, n.ID().String()); r.Round >= first && !own {
			t.Errorf("round %d after the restart at %d (local work from round %d): own contribution included %v", r.Round, next, first, own)
		}
	}
	again, led2 := storedRoots2(t, n)
	if led2 < led.Round+3 {
		t.Fatalf("after the restart the ledger is at round %d, want %d or more", led2, led.Round+3)
	}
	for r, root := range roots {
		if again[r] != root {
			t.Fatalf("round %d committed before the restart: root %s, now %s", r, root, again[r])
		}
	}
}

// checkBackOnTheirRoots: from the second round after h0 (the others' head when n was
// started again) on, n holds the others' state root: rounds h0+2 and h0+3 once all have
// closed them.
func checkBackOnTheirRoots(t *testing.T, ctx context.Context, n *Node, others []*Node, h0 uint64) {
	t.Helper()
	if err := p2ptest.Poll(ctx, "3 rounds closed after the restart", 50*time.Millisecond, func() bool {
		h, ok := head(n)
		return ok && h >= h0+3 && lowHead(others) >= h0+3
	}); err != nil {
		t.Fatal(err)
	}
	for r := h0 + 2; r <= h0+3; r++ {
		if want, got := majorityRoot(t, others, r), storedRoot(t, n, r); !bytes.Equal(got, want) {
			t.Errorf("round %d, after a restart at the others' round %d: root %x, they hold %x", r, h0, got, want)
		}
	}
}

// TestRestartFarBehindIsBackOnTheirRoots: a node of a swarm of three stopped for longer
// than its peers keep shards and records to repair from (8 rounds, they keep 6) is, once
// started again on its home, on their state root from the second round after.
func TestRestartFarBehindIsBackOnTheirRoots(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	rs := startRestartSwarm(t, ctx, 3)
	last := len(rs.nodes) - 1
	closedRounds(t, ctx, rs.nodes[last], 3)
	rs.stop()
	_, led := storedRoots(t, rs.homes[last])
	others := rs.nodes[:last]
	if err := p2ptest.Poll(ctx, "8 rounds closed by the others", 50*time.Millisecond, func() bool { return lowHead(others) >= led.Round+8 }); err != nil {
		t.Fatal(err)
	}
	h0 := lowHead(others)
	n, _, _ := rs.startLast(t, ctx)
	checkBackOnTheirRoots(t, ctx, n, others, h0)
}

// storedRoots2 reads the roots of a running node's store.
func storedRoots2(t *testing.T, n *Node) ([]string, uint64) {
	t.Helper()
	var roots []string
	err := n.ledger.st.Records(0, func(r uint64, data []byte) error {
		rec, err := incentives.DecodeRecord(data)
		if err != nil {
			return err
		}
		roots = append(roots, hex.EncodeToString(rec.NewRoot))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return roots, n.ledger.state.Load().Round
}

// checkResumeSeedsRepairWindow: resuming on a copy of a stopped node's home replays far
// enough back (from an older checkpoint when the latest is too recent) to hand the core
// the last repair_depth rounds before its head, which it takes (core.Seed).
func checkResumeSeedsRepairWindow(t *testing.T, h configs.Home, s *configs.Spec) {
	t.Helper()
	l, err := openLedger(copyHome(t, h), s)
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	p, err := NewParams(s)
	if err != nil {
		t.Fatal(err)
	}
	key, err := h.LoadIdentity()
	if err != nil {
		t.Fatal(err)
	}
	self, _ := peer.IDFromPrivateKey(key)
	rp, err := resume(p, s, self.String(), l, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	kept, err := l.st.Checkpoints()
	if err != nil {
		t.Fatal(err)
	}
	head, from := rp.state.Round, uint64(0) // the stored shards go back to the oldest checkpoint kept
	if len(kept) > 0 {
		from = kept[0].Round
	}
	want := min(repairDepth(s), head-from)
	var rounds []uint64
	for _, sn := range rp.snaps {
		rounds = append(rounds, sn.Pre.Round)
	}
	if uint64(len(rounds)) != want || want > 0 && rounds[len(rounds)-1] != head-1 {
		t.Fatalf("resumed at round %d (oldest checkpoint kept %d) with snapshots of rounds %v, want the last %d", head, from, rounds, want)
	}
	c, err := newCore(p, s, key, rp.state, rp.ledger)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Seed(rp.snaps); err != nil {
		t.Fatalf("the core refuses the replay's snapshots: %v", err)
	}
}
