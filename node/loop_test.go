package node

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/node/attest"
	"github.com/lowband/lowband/node/core"
	"github.com/lowband/lowband/p2p/p2ptest"
)

// fakeClock is a clock the test moves; its ticker ticks when the test says.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
	c   chan time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), c: make(chan time.Time)}
}

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeClock) NewTicker(time.Duration) ticker { return fakeTicker{f.c} }

// advance moves the clock by d and delivers one tick at the new time.
func (f *fakeClock) advance(ctx context.Context, d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	now := f.now
	f.mu.Unlock()
	select {
	case f.c <- now:
	case <-ctx.Done():
	}
}

type fakeTicker struct{ c chan time.Time }

func (t fakeTicker) C() <-chan time.Time { return t.c }
func (t fakeTicker) Stop()               {}

// simSigner attests a node's key with the devnet sim root, as the node's attestor would.
func simSigner(t *testing.T, s *configs.Spec, key crypto.PrivKey) func(context.Context, uint64) (core.Signer, error) {
	return func(ctx context.Context, epoch uint64) (core.Signer, error) {
		pub, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return core.Signer{}, err
		}
		b, err := attest.Attest(ctx, attest.NewSimProducer(attest.DevnetSimRoot(), make([]byte, 48)), s.NetworkID(), s.Run, key, epoch, pub)
		if err != nil {
			return core.Signer{}, err
		}
		data, err := b.Marshal()
		if err != nil {
			return core.Signer{}, err
		}
		return core.Signer{Key: priv, Bundle: data, BundleHash: b.Hash()}, nil
	}
}

// loopHarness is one node's loop without a network: what it publishes and commits is
// recorded.
type loopHarness struct {
	l       *loop
	clk     *fakeClock
	mu      sync.Mutex
	commits []*core.Commit
	sent    map[string]int
}

func newLoopHarness(t *testing.T, s *configs.Spec, key crypto.PrivKey) *loopHarness {
	t.Helper()
	id, err := peer.IDFromPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	h := &loopHarness{clk: newFakeClock(), sent: map[string]int{}}
	p, err := NewParams(s)
	if err != nil {
		t.Fatal(err)
	}
	led, err := p.GenesisState()
	if err != nil {
		t.Fatal(err)
	}
	deps := loopDeps{
		commit: func(c *core.Commit) error {
			h.mu.Lock()
			h.commits = append(h.commits, c)
			h.mu.Unlock()
			return nil
		},
		publish: func(_ context.Context, kind string, _ []byte) error {
			h.mu.Lock()
			h.sent[kind]++
			h.mu.Unlock()
			return nil
		},
		attest: simSigner(t, s, key),
	}
	g := gauges{bandwidth: func() (int64, int64) { return 0, 0 }, verifyCPU: func() time.Duration { return 0 }, stash: func() int { return 0 }}
	cfg, err := configs.Default(configs.ProfileLocal)
	if err != nil {
		t.Fatal(err)
	}
	tp, err := newTraining(s, cfg, id.String(), led, h.clk, deps, g, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	h.l = tp.loop
	return h
}

// TestSilentPeersRoundClosesAtDeadlineAndTrainingGoesOn: a node whose two staked peers
// never send anything closes each round once the deadline has passed since its own local
// work, not before, with itself alone, and keeps training round after round.
func TestSilentPeersRoundClosesAtDeadlineAndTrainingGoesOn(t *testing.T) {
	key := p2ptest.Key()
	self, _ := peer.IDFromPrivateKey(key)
	s := syntheticSpec(t, map[string]uint64{self.String(): 100, testPeerID(t): 100, testPeerID(t): 100})
	h := newLoopHarness(t, s, key)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := NewParams(s)
	if err != nil {
		t.Fatal(err)
	}
	initial, _ := st.Initial()
	done := make(chan error, 1)
	go func() { done <- h.l.run(ctx, initial) }()

	// The deadline of round r runs from this node's own local work of r. With the delay,
	// rounds 0 and 1 end their local work at once (time 0), so both close at D; rounds 2
	// and 3 end theirs when round 0 closes, at D, so both close at 2D.
	deadline := time.Duration(s.Round.DeadlineMax * float64(time.Second))
	for step := uint64(1); step <= 2; step++ {
		waitFor(t, ctx, func() bool { return h.l.View().NextLocal == 2*step })
		h.clk.advance(ctx, deadline-time.Millisecond)
		h.clk.advance(ctx, 0) // taken only once the loop is done with the tick before
		if got := h.l.View().NextClose; got != 2*(step-1) {
			t.Fatalf("step %d: a round closed before its deadline (next open round %d)", step, got)
		}
		h.clk.advance(ctx, time.Millisecond)
		waitFor(t, ctx, func() bool { return h.l.View().NextClose == 2*step })
	}
	waitFor(t, ctx, func() bool { return h.l.View().NextLocal == 6 }) // training went on
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, c := range h.commits {
		if c.Record.Round != uint64(i) || len(c.Record.Contributions) != 1 || c.Record.Contributions[0].Peer != self.String() {
			t.Fatalf("commit %d: round %d, contributions %+v", i, c.Record.Round, c.Record.Contributions)
		}
	}
	if len(h.commits) != 4 || h.sent["records"] != 4 || h.sent["shards"] < 4 {
		t.Fatalf("%d commits, sent %v", len(h.commits), h.sent)
	}
	st2 := h.l.prog.status()
	if len(st2.Rounds) != 4 || st2.Rounds[0].DeadlineS != deadline.Seconds() || st2.Rounds[2].StallS <= 0 {
		t.Fatalf("rounds %+v", st2.Rounds)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// waitFor polls cond until it holds or ctx ends.
func waitFor(t *testing.T, ctx context.Context, cond func() bool) {
	t.Helper()
	if err := p2ptest.Poll(ctx, "condition", time.Millisecond, cond); err != nil {
		t.Fatal(err)
	}
}
