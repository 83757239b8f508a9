package node

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/node/attest"
	"github.com/lowband/lowband/node/core"
	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/p2p/p2ptest"
	"github.com/lowband/lowband/training"
	"github.com/lowband/lowband/training/round"
	"github.com/lowband/lowband/verify"
)

// fakeClock is a clock the test moves; its tickers tick when the test says. One clock may
// drive several loops.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
	cs  []chan time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)}
}

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeClock) NewTicker(time.Duration) ticker {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := make(chan time.Time)
	f.cs = append(f.cs, c)
	return fakeTicker{c}
}

// advance moves the clock by d and delivers one tick at the new time to every ticker.
func (f *fakeClock) advance(ctx context.Context, d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	now, cs := f.now, f.cs
	f.mu.Unlock()
	for _, c := range cs {
		select {
		case c <- now:
		case <-ctx.Done():
		}
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
// recorded, and with a bus its shards and evidence reach the other loops on the bus.
type loopHarness struct {
	l       *loop
	clk     *fakeClock
	initial []training.Tensor
	mu      sync.Mutex
	commits []*core.Commit
	sent    map[string]int
	// persisted lists the repairs ("repair <from>") and commits ("commit <round>") in the
	// order the loop persisted them; repairErr is what persisting a repair returns.
	persisted []string
	repairErr error
	views     []core.View // the views the loop published to the validators, in order
}

// bus stands in for gossip and the validators between loops in one test: every shard
// and evidence item a loop publishes reaches every other loop's inbox at once, with its
// signer's bundle. It checks nothing.
type bus struct {
	mu      sync.Mutex
	loops   []*loop
	bundles map[[32]byte][]byte
	max     int // shard payload limit
}

func (b *bus) publish(from *loop, kind string, data []byte) error {
	var ev any
	switch kind {
	case p2p.KindShards:
		sh, err := verify.UnmarshalShard(data, b.max)
		if err != nil {
			return err
		}
		b.mu.Lock()
		bundle := b.bundles[[32]byte(sh.Header.BundleHash)]
		b.mu.Unlock()
		ev = shardIn{shard: sh, bundle: bundle, at: from.clk.Now()}
	case p2p.KindEvidence:
		e, err := incentives.DecodeEvidence(data)
		if err != nil {
			return err
		}
		ev = evidenceIn{ev: e}
	case p2p.KindRecords:
		sr, rec, err := incentives.DecodeSignedRecord(data)
		if err != nil {
			return err
		}
		ev = recordIn{sr: sr, rec: rec}
	default:
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, l := range b.loops {
		if l != from && !l.deliver(ev) {
			return errors.New("inbox full")
		}
	}
	return nil
}

func newLoopHarness(t *testing.T, s *configs.Spec, key crypto.PrivKey, clk *fakeClock, b *bus) *loopHarness {
	t.Helper()
	h := &loopHarness{clk: clk, sent: map[string]int{}}
	p, err := NewParams(s)
	if err != nil {
		t.Fatal(err)
	}
	led, err := p.GenesisState()
	if err != nil {
		t.Fatal(err)
	}
	attestFn := simSigner(t, s, key)
	deps := loopDeps{
		commit: func(c *core.Commit) error {
			h.mu.Lock()
			h.commits = append(h.commits, c)
			h.persisted = append(h.persisted, fmt.Sprint("commit ", c.Record.Round))
			h.mu.Unlock()
			return nil
		},
		repair: func(rp *core.Repair) error {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.persisted = append(h.persisted, fmt.Sprint("repair ", rp.From))
			return h.repairErr
		},
		publish: func(_ context.Context, kind string, data []byte) error {
			h.mu.Lock()
			h.sent[kind]++
			h.mu.Unlock()
			if b != nil {
				return b.publish(h.l, kind, data)
			}
			return nil
		},
		view: func(v core.View) {
			h.mu.Lock()
			h.views = append(h.views, v)
			h.mu.Unlock()
		},
		attest: func(ctx context.Context, epoch uint64) (core.Signer, error) {
			sg, err := attestFn(ctx, epoch)
			if err == nil && b != nil {
				b.mu.Lock()
				b.bundles[sg.BundleHash] = sg.Bundle
				b.mu.Unlock()
			}
			return sg, err
		},
	}
	g := gauges{bandwidth: func() (int64, int64) { return 0, 0 }, verifyCPU: func() time.Duration { return 0 }, stash: func() int { return 0 }}
	cfg, err := configs.Default(configs.ProfileLocal)
	if err != nil {
		t.Fatal(err)
	}
	rp, err := freshStart(p, led)
	if err != nil {
		t.Fatal(err)
	}
	tp, err := newTraining(p, s, cfg, key, rp, clk, deps, g, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	h.l, h.initial = tp.loop, tp.initial.Params
	if b != nil {
		b.mu.Lock()
		b.loops = append(b.loops, h.l)
		b.mu.Unlock()
	}
	return h
}

// run runs the harness's loop until the test ends.
func (h *loopHarness) run(t *testing.T, ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- h.l.run(ctx, round.State{Params: h.initial}) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
}

// TestValidatorsHaveTheViewBeforeTheLoopRuns: the validators get the core's view when
// the loop is made, not at its first event. Before, they judged shards by an empty view
// (no window ahead) while the node waited for its genesis peers or joined, and ignored as
// "future" every round-1 shard the faster peers sent meanwhile; gossip does not send a
// message twice, so a round with the delay closed at deadline_max with a few
// contributions (a 100-node swarm: 9 of 100).
func TestValidatorsHaveTheViewBeforeTheLoopRuns(t *testing.T) {
	key := p2ptest.Key()
	self, _ := peer.IDFromPrivateKey(key)
	s := syntheticSpec(t, map[string]uint64{self.String(): 100, testPeerID(t): 100})
	h := newLoopHarness(t, s, key, newFakeClock(), nil)
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.views) != 1 {
		t.Fatalf("%d views published before the loop ran, want 1", len(h.views))
	}
	v := h.views[0]
	if r, reason := window(v, 1); r != p2p.Accept {
		t.Fatalf("a round-1 shard before round 0 starts: %v (%s), want it taken (view %+v)", r, reason, v)
	}
	if r, reason := window(v, 1+v.Window); r != p2p.Ignore || reason != reasonFuture {
		t.Fatalf("a shard past the window: %v (%s), want ignored as future", r, reason)
	}
}

// TestSilentPeersRoundClosesAtDeadlineAndTrainingGoesOn: a node whose two staked peers
// never send anything closes each round once the deadline has passed since its own local
// work, not before, with itself alone, and keeps training round after round.
func TestSilentPeersRoundClosesAtDeadlineAndTrainingGoesOn(t *testing.T) {
	key := p2ptest.Key()
	self, _ := peer.IDFromPrivateKey(key)
	s := syntheticSpec(t, map[string]uint64{self.String(): 100, testPeerID(t): 100, testPeerID(t): 100})
	h := newLoopHarness(t, s, key, newFakeClock(), nil)
	start := h.clk.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h.run(t, ctx)

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
	// Each round says when its contribution went to gossip: rounds 0 and 1 at the start,
	// rounds 2 and 3 once round 0 closed, at D.
	for i, r := range st2.Rounds {
		want := start.Add(time.Duration(i/2) * deadline).UTC().Format(timeMS)
		if r.SentAt != want || r.ClosedAt != start.Add(time.Duration(1+i/2)*deadline).UTC().Format(timeMS) {
			t.Errorf("round %d: sent at %s, closed at %s; want sent at %s", r.Round, r.SentAt, r.ClosedAt, want)
		}
	}
}

// waitFor polls cond until it holds or ctx ends.
func waitFor(t *testing.T, ctx context.Context, cond func() bool) {
	t.Helper()
	if err := p2ptest.Poll(ctx, "condition", time.Millisecond, cond); err != nil {
		t.Fatal(err)
	}
}

// TestSilentPeerAdaptiveDeadline: three loops that hear each other at once and a staked
// fourth peer that never speaks. Until the nodes have 8 arrival delays each, a round waits
// for the spec's maximum; from then on for the adaptive deadline (here its minimum, as the
// delays are all 0), far below the maximum. Every node keeps training and all three hold
// the same roots after every round.
func TestSilentPeerAdaptiveDeadline(t *testing.T) {
	keys := []crypto.PrivKey{p2ptest.Key(), p2ptest.Key(), p2ptest.Key()}
	stakes := map[string]uint64{testPeerID(t): 100} // the silent one
	for _, k := range keys {
		id, _ := peer.IDFromPrivateKey(k)
		stakes[id.String()] = 100
	}
	s := syntheticSpec(t, stakes)
	s.Round = configs.RoundSpec{DeadlineMin: 2, DeadlineMax: 20}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	clk := newFakeClock()
	b := &bus{bundles: map[[32]byte][]byte{}, max: s.Training.Compression.MaxShardBytes}
	var hs []*loopHarness
	for _, k := range keys {
		hs = append(hs, newLoopHarness(t, s, k, clk, b))
	}
	for _, h := range hs {
		h.run(t, ctx)
	}
	const rounds = 10
	start := clk.Now()
	for closed := uint64(0); closed < rounds; {
		// Every loop waits for a close, its local work of the next round done.
		waitFor(t, ctx, func() bool {
			for _, h := range hs {
				if v := h.l.View(); v.NextLocal != v.NextClose+2 || h.l.inboxDepth() > 0 {
					return false
				}
			}
			return true
		})
		clk.advance(ctx, time.Second)
		clk.advance(ctx, 0) // each loop is done with the tick before
		closed = hs[0].l.View().NextClose
	}
	// A closed round reaches the status with its held-out loss, which the evaluator computes
	// off the loop: wait for every node's first rounds to be there.
	waitFor(t, ctx, func() bool {
		for _, h := range hs {
			if len(h.l.prog.status().Rounds) < rounds {
				return false
			}
		}
		return true
	})
	first := hs[0].l.prog.status()
	for i, h := range hs {
		st := h.l.prog.status()
		for r, rs := range st.Rounds[:rounds] {
			if rs.StateRoot != first.Rounds[r].StateRoot || rs.LedgerRoot != first.Rounds[r].LedgerRoot || len(rs.Included) != 3 {
				t.Fatalf("node %d round %d: roots %.12s %.12s, want %.12s %.12s; included %d", i, r, rs.StateRoot, rs.LedgerRoot,
					first.Rounds[r].StateRoot, first.Rounds[r].LedgerRoot, len(rs.Included))
			}
		}
	}
	var deadlines []float64
	for _, rs := range first.Rounds[:rounds] {
		deadlines = append(deadlines, rs.DeadlineS)
	}
	if deadlines[0] != s.Round.DeadlineMax || deadlines[rounds-1] != s.Round.DeadlineMin {
		t.Fatalf("deadlines by round %v: want %v first, %v once 8 delays are known", deadlines, s.Round.DeadlineMax, s.Round.DeadlineMin)
	}
	// Rounds 0 and 1 wait 20 s, then the next ones 2 s a pair: 10 rounds in well under the
	// 100 s they would take at the maximum.
	if took := clk.Now().Sub(start); took > 40*time.Second {
		t.Fatalf("%d rounds took %v of the clock; deadlines %v", rounds, took, deadlines)
	}
	t.Logf("deadline by round: %v; %d rounds in %v", deadlines, rounds, clk.Now().Sub(start))
}

// TestNewSignerEachEpoch: when the local work enters a new attestation epoch the loop
// attests a fresh key for it, and every shard the node signs names the bundle of its
// round's epoch.
func TestNewSignerEachEpoch(t *testing.T) {
	key := p2ptest.Key()
	self, _ := peer.IDFromPrivateKey(key)
	s := syntheticSpec(t, map[string]uint64{self.String(): 100})
	s.Attest.EpochRounds = 2
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	b := &bus{bundles: map[[32]byte][]byte{}, max: s.Training.Compression.MaxShardBytes}
	h := newLoopHarness(t, s, key, newFakeClock(), b)
	var mu sync.Mutex
	epochOf := map[[32]byte]uint64{}
	var attested []uint64
	signer := h.l.deps.attest
	h.l.deps.attest = func(ctx context.Context, epoch uint64) (core.Signer, error) {
		sg, err := signer(ctx, epoch)
		mu.Lock()
		attested, epochOf[sg.BundleHash] = append(attested, epoch), epoch
		mu.Unlock()
		return sg, err
	}
	var wrong []string
	publish := h.l.deps.publish
	h.l.deps.publish = func(ctx context.Context, kind string, data []byte) error {
		if kind == p2p.KindShards {
			sh, err := verify.UnmarshalShard(data, b.max)
			if err != nil {
				return err
			}
			mu.Lock()
			if e, ok := epochOf[[32]byte(sh.Header.BundleHash)]; !ok || e != sh.Header.Round/2 {
				wrong = append(wrong, fmt.Sprintf("round %d under the bundle of epoch %d (%v)", sh.Header.Round, e, ok))
			}
			mu.Unlock()
		}
		return publish(ctx, kind, data)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h.run(t, ctx)
	waitFor(t, ctx, func() bool { return h.l.View().NextClose >= 6 })
	mu.Lock()
	defer mu.Unlock()
	if len(wrong) > 0 {
		t.Fatalf("shards signed under another epoch's bundle: %v", wrong)
	}
	if len(attested) < 3 || !slices.Equal(attested[:3], []uint64{0, 1, 2}) {
		t.Fatalf("attested for epochs %v, want 0, 1, 2, ...", attested)
	}
}

// TestRepublishOnceInRepublishEveryRoundsSpread: a node republishes its bundle in one round
// of every republishEvery, and the rounds of different nodes' bundles are spread over them.
func TestRepublishOnceInRepublishEveryRoundsSpread(t *testing.T) {
	offsets := map[uint64]bool{}
	for i := range 64 {
		bundle := []byte(fmt.Sprintf("bundle %d", i))
		var at []uint64
		for r := range uint64(3 * republishEvery) {
			if republishes(bundle, r) {
				at = append(at, r)
			}
		}
		if len(at) != 3 || at[1]-at[0] != republishEvery || at[2]-at[1] != republishEvery {
			t.Fatalf("bundle %d republished after rounds %v of %d", i, at, 3*republishEvery)
		}
		offsets[at[0]] = true
	}
	if len(offsets) < republishEvery/3 {
		t.Fatalf("64 bundles republished in only %d of the %d rounds", len(offsets), republishEvery)
	}
}
