package node

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
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
	// What it resumed from (its replayed rounds' states, its local state: about 100 MB on
	// the default task) is let go once the catch-up used it; a resync that kept it held a
	// joiner at twice a node's heap.
	rs.stop()
	if rp := n.train.resumed; rp.local != nil || len(rp.snaps) > 0 {
		t.Errorf("after the catch-up the node still holds its resume point: local state %v, %d rounds replayed", rp.local != nil, len(rp.snaps))
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

// TestRunningNodeFarBehindResyncs: a node of a swarm of three cut off (every connection
// closed and refused) while the others close more rounds than its repair window holds
// closes rounds alone meanwhile; once let back, their records of its rounds are outside
// its window and no repair can bring it back, so it looks at their heads, finds itself
// behind, resumes from its store, catches up from their records and a checkpoint, and
// holds their state root, says so in /status and the metrics.
func TestRunningNodeFarBehindResyncs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	gate := &p2ptest.Gate{}
	spec := func(s *configs.Spec) {
		// The others, with a quorum, close at the adaptive deadline once it has enough
		// arrivals to go by; the cut node, without, at the maximum.
		s.Round = configs.RoundSpec{Quorum: 0.6, DeadlineMin: 1, DeadlineMax: 6}
		s.Agreement.CheckpointEvery = 2
		s.Agreement.RepairDepth = 2
	}
	swarm, _, boot := startSwarmWith(t, ctx, 3, spec, func(i int, o *Options) {
		if i == 0 {
			o.gater = gate
		}
	})
	cut, others := swarm[0], swarm[1:]
	poll := func(what string, cond func() bool) {
		t.Helper()
		if err := p2ptest.Poll(ctx, what, 50*time.Millisecond, cond); err != nil {
			for _, n := range swarm {
				h, _ := head(n)
				t.Logf("%s: head %d, agreement %+v", n.ID(), h, n.train.loop.Agreement())
			}
			t.Fatal(err)
		}
	}
	poll("every node closing round 4", func() bool { return lowHead(swarm) >= 4 })
	gate.Cut(cut.host)
	poll("the others more rounds ahead than its repair window", func() bool {
		h, _ := head(cut)
		return lowHead(others) >= h+5
	})
	if n := cut.resyncs.Load(); n != 0 {
		t.Fatalf("%d resyncs while cut off", n)
	}
	gate.Restore()
	alone, _ := head(cut)
	restored := lowHead(others)
	reconnect(t, ctx, cut, append([]*Node{boot}, others...)...)
	t.Logf("let back at the others' round %d; it closed up to %d alone", restored, alone)
	var at uint64
	poll("the cut node back on the others' root", func() bool {
		h, _ := head(cut)
		if m := min(h, lowHead(others)-1); m > restored {
			if want := majorityRoot(t, others, m); want != nil && bytes.Equal(storedRoot(t, cut, m), want) {
				at = m
				return true
			}
		}
		if f := lowHead(others); f > restored+12 {
			t.Fatalf("the others closed rounds %d to %d since the node was let back, and it does not hold their root: agreement %+v, resyncs %d",
				restored+1, f, cut.train.loop.Agreement(), cut.resyncs.Load())
		}
		return false
	})
	st := cut.agreementStatus()
	if st.Resyncs == 0 || st.LastResync == nil || st.LastResync.To <= alone {
		t.Fatalf("back on the others' root at round %d without a resync past its head %d: %+v %+v", at, alone, st, st.LastResync)
	}
	t.Logf("back on the others' root at round %d; %+v", at, *st.LastResync)
	checkStatusListsEveryRound(t, cut, alone+1, st.LastResync.To)
	metrics := string(get(t, "http://"+cut.APIAddr()+"/metrics"))
	if !strings.Contains(metrics, "lowband_agreement_resyncs_total ") || strings.Contains(metrics, "lowband_agreement_resyncs_total 0\n") {
		t.Error("lowband_agreement_resyncs_total does not count the resync")
	}
}

// TestCatchUpHeadNeedsAMajorityOfTheVotingPower: the head a catch-up or the head watch
// goes by is the highest round that peers carrying more than half of the voting power
// reach; a peer without power claiming a round far ahead, or a minority, moves nothing,
// and a record signed by a minority of the node's ledger is no majority however many
// powerless signers add to it.
func TestCatchUpHeadNeedsAMajorityOfTheVotingPower(t *testing.T) {
	ids := newPeerIDs(t, 6)
	led := stakeLedger(t, ids[:4], 1000, 1000, 1000, 1000) // ids[4] and ids[5] hold no stake
	at := func(p peer.ID, r uint64, root byte) peerHead {
		return peerHead{from: p, rec: &incentives.Record{Round: r, NewRoot: bytes.Repeat([]byte{root}, 32)}}
	}
	liars := []peerHead{at(ids[4], 1000, 9), at(ids[5], 900, 9), at(ids[0], 500, 9)}
	if h, ok := headOfPower(refsOf(liars), led); ok {
		t.Fatalf("powerless peers and a minority moved the head to %d", h)
	}
	if h, ok := headOfPower(refsOf(append(liars, at(ids[1], 11, 1))), led); ok {
		t.Fatalf("half of the power moved the head to %d", h)
	}
	if h, ok := headOfPower(refsOf(append(liars, at(ids[1], 11, 1), at(ids[2], 10, 1))), led); !ok || h != 10 {
		t.Fatalf("head %d %v, want 10: the highest round three of four staked peers reach", h, ok)
	}
	// A record of round 10 that a minority of the power signed, with powerless signers.
	lie := []peerHead{at(ids[0], 10, 9), at(ids[4], 10, 9), at(ids[5], 10, 9), at(ids[1], 10, 1)}
	if rec, _, err := majorityOf(lie, led, 10); err == nil {
		t.Fatalf("a record of a minority of the power taken: root %x", rec.NewRoot[:4])
	}
	rec, signers, err := majorityOf(append(lie, at(ids[2], 10, 1), at(ids[3], 10, 1)), led, 10)
	if err != nil || rec.NewRoot[0] != 1 || len(signers) != 3 {
		t.Fatalf("the record of three of four staked peers: %v %v", signers, err)
	}
}

// TestPluralityPicksOneLineageOfASplit: when the committed records of a round carry no
// majority (two halves, or three equal thirds, each on a lineage of its own), the record
// of most power is picked, equal powers going to the record whose signers include the
// least peer ID, whatever the order of the answers and whatever the records' bytes, so
// that every node that heard the same answers follows the same lineage at every round;
// never on the answers of half of the power or less, nor on powerless peers.
// followOf then takes a round's record only when every followed peer that answered
// committed the same.
func TestPluralityPicksOneLineageOfASplit(t *testing.T) {
	ids := newPeerIDs(t, 6)
	led := stakeLedger(t, ids[:4], 1000, 1000, 1000, 1000) // ids[4] and ids[5] hold no stake
	at := func(p peer.ID, root byte) peerHead {
		return peerHead{from: p, rec: &incentives.Record{Round: 10, NewRoot: bytes.Repeat([]byte{root}, 32)}}
	}
	least := slices.Min(ids[:4])
	for _, roots := range [][4]byte{{7, 7, 3, 3}, {3, 3, 7, 7}} {
		halves := []peerHead{at(ids[0], roots[0]), at(ids[1], roots[1]), at(ids[2], roots[2]), at(ids[3], roots[3])}
		if _, _, err := majorityOf(halves, led, 10); err == nil {
			t.Fatal("a half of the power taken as a majority")
		}
		want := roots[slices.Index(ids, least)]
		for _, order := range [][]int{{0, 1, 2, 3}, {3, 2, 1, 0}, {2, 0, 3, 1}} {
			var hs []peerHead
			for _, i := range order {
				hs = append(hs, halves[i])
			}
			rec, signers, err := pluralityOf(hs, led, 10)
			if err != nil || rec.NewRoot[0] != want || len(signers) != 2 || !slices.Contains(signers, least) {
				t.Fatalf("roots %v, order %v: picked %v by %v (%v), want root %d, the half of the least peer ID", roots, order, rec, signers, err, want)
			}
		}
	}
	// More power beats fewer bytes; powerless signers add none.
	thirds := []peerHead{at(ids[0], 9), at(ids[1], 9), at(ids[2], 1), at(ids[4], 1), at(ids[5], 1)}
	if rec, _, err := pluralityOf(thirds, led, 10); err != nil || rec.NewRoot[0] != 9 {
		t.Fatalf("picked %v (%v), want the root of two staked peers over one of one staked and two powerless", rec, err)
	}
	// Half of the power answering, or only powerless peers: nothing.
	if rec, _, err := pluralityOf([]peerHead{at(ids[0], 1), at(ids[1], 2), at(ids[4], 0)}, led, 10); err == nil {
		t.Fatalf("picked %x on answers carrying half of the power", rec.NewRoot[:4])
	}
	if rec, _, err := pluralityOf([]peerHead{at(ids[4], 1), at(ids[5], 1)}, led, 10); err == nil {
		t.Fatalf("picked %x on powerless answers", rec.NewRoot[:4])
	}
	// Three lineages of one staked peer each, and a fourth silent: the least peer ID.
	three := []peerHead{at(ids[1], 8), at(ids[0], 5), at(ids[3], 6)}
	first := slices.Min([]peer.ID{ids[0], ids[1], ids[3]})
	rec, signers, err := pluralityOf(three, led, 10)
	if err != nil || !slices.Equal(signers, []peer.ID{first}) {
		t.Fatalf("three lineages: picked %v by %v (%v), want the record of %s", rec, signers, err, first)
	}
	if got, _, err := followOf(three, signers, 10); err != nil || got != rec {
		t.Fatalf("following %v: %v (%v)", signers, got, err)
	}
	if _, _, err := followOf(append(three, at(ids[2], 4)), []peer.ID{ids[0], ids[2]}, 10); !errors.Is(err, errNoMajority) {
		t.Fatalf("followed peers that committed different records gave a record (%v)", err)
	}
	if _, _, err := followOf(three, []peer.ID{ids[2]}, 10); !errors.Is(err, errNoMajority) {
		t.Fatalf("no followed peer answered, and a record came (%v)", err)
	}
}

// TestPluralityCountsTheNodeItself: every node of a split, each counting its own record
// with its peers' answers (pluralityWith), picks the same lineage: the one a majority
// holds when there is one (two nodes of 30% stay on their root against a 40% signer; a
// 3 of 5 majority stays whatever the peer IDs, also with one of the 3 silent), else the
// one of most power, ties to the least peer ID (halves, thirds, two single nodes); with a
// voter silent and no side larger than the rest, each stays. A key with no stake answering a copy
// of a record changes no pick. Before the node counted itself, each node of the 30/30 pair
// saw its partner's 30 against 40 and took the minority's lineage.
func TestPluralityCountsTheNodeItself(t *testing.T) {
	keys := newPeerIDs(t, 6)
	slices.Sort(keys) // keys[0] is the least peer ID
	rec := func(root byte) *incentives.Record {
		return &incentives.Record{Round: 10, NewRoot: bytes.Repeat([]byte{root}, 32)}
	}
	for _, c := range []struct {
		name   string
		stakes []uint64 // of keys[i]
		roots  []byte   // the root each holds
		want   byte
	}{
		{"a 40% signer against two of 30%", []uint64{400, 300, 300}, []byte{2, 1, 1}, 1},
		{"3 of 5, the least ID in the 2", []uint64{100, 100, 100, 100, 100}, []byte{2, 2, 1, 1, 1}, 1},
		{"halves", []uint64{100, 100, 100, 100}, []byte{2, 1, 2, 1}, 2},
		{"thirds", []uint64{100, 100, 100}, []byte{3, 1, 2}, 3},
		{"two single nodes", []uint64{100, 100}, []byte{2, 1}, 2},
		// The last of the three on root 1 does not answer: the others on root 1 must not
		// take the 2 of least IDs for the larger side (and the 2 cannot tell either).
		{"3 of 5, one of the 3 silent", []uint64{100, 100, 100, 100, 100}, []byte{2, 2, 1, 1, 0}, 0},
		// Two halves, one node silent: nobody can tell, and each stays.
		{"halves, one silent", []uint64{100, 100, 100, 100}, []byte{2, 1, 2, 0}, 0},
	} {
		led := stakeLedger(t, keys[1:len(c.stakes)+1], c.stakes...)
		// keys[0], the least ID, holds no stake and answers a copy of the losing side's record.
		var loser byte = 1
		if c.want == 1 {
			loser = 2
		}
		for i := range c.stakes {
			if c.roots[i] == 0 { // silent
				continue
			}
			heads := []peerHead{{from: keys[0], rec: rec(loser)}}
			for o := range c.stakes {
				if o != i && c.roots[o] != 0 {
					heads = append(heads, peerHead{from: keys[o+1], rec: rec(c.roots[o])})
				}
			}
			want := c.want
			if want == 0 { // each stays on its own
				want = c.roots[i]
			}
			pick, signers, err := pluralityWith(heads, peerHead{from: keys[i+1], rec: rec(c.roots[i])}, led, 10)
			if err != nil || pick.NewRoot[0] != want || slices.Contains(signers, keys[0]) {
				t.Errorf("%s: node %d (root %d) picked %v by %v (%v), want root %d", c.name, i, c.roots[i], pick, signers, err, want)
			}
		}
	}
}

// TestAskOrderReachesAMajorityOfManyEqualVoters: with 40 voters of equal power, the peers a
// catch-up asks carry more than three quarters of the power (a fixed 16 carried 40%, so a
// head or a record could never be taken); with 4 voters and many powerless topic peers it
// stays at joinPeers, voters first; never itself.
func TestAskOrderReachesAMajorityOfManyEqualVoters(t *testing.T) {
	ids := newPeerIDs(t, 60)
	ledger := func(voters []peer.ID) *incentives.State {
		var g incentives.Genesis
		for _, id := range voters {
			g.Stakes = append(g.Stakes, incentives.Stake{Peer: id.String(), Amount: 1000})
		}
		led, err := incentives.NewState(incentives.Params{MinStake: 100, Reward: 10, JailRounds: 3, EvidenceWindow: 4}, g)
		if err != nil {
			t.Fatal(err)
		}
		return led
	}
	power := func(led *incentives.State, ps []peer.ID) uint64 {
		var w uint64
		for _, p := range ps {
			w += led.Power(p.String())
		}
		return w
	}
	self := ids[0]
	led := ledger(ids[:41]) // self and 40 others
	got := askOrder(self, ids[41:], ids, led)
	if slices.Contains(got, self) {
		t.Fatal("askOrder asks the node itself")
	}
	if w := power(led, got); 4*w <= 3*(led.TotalPower()-led.Power(self.String())) {
		t.Fatalf("%d peers asked carry %d of %d voting power", len(got), w, led.TotalPower())
	}
	if 2*power(led, got[:joinPeers]) > led.TotalPower() {
		t.Fatal("the test needs voters whose first joinPeers carry no majority")
	}

	led = ledger(ids[1:5])
	got = askOrder(self, ids[5:], ids[1:5], led)
	if len(got) != joinPeers {
		t.Fatalf("%d peers asked, want joinPeers (%d)", len(got), joinPeers)
	}
	for i, p := range got[:4] {
		if led.Power(p.String()) == 0 {
			t.Fatalf("peer %d asked has no power: voters come first", i)
		}
	}
}

// checkStatusListsEveryRound: n's status lists its rounds once each and in order, those
// a catch-up closed again from its peers' records marked caught_up with no loss and a
// root, in [from, to), and its next round is to. Rounds a jump passed over with a
// checkpoint are not listed: the node never saw their records.
func checkStatusListsEveryRound(t *testing.T, n *Node, from, to uint64) {
	t.Helper()
	st := n.trainingStatus()
	rs := st.Rounds
	for i, r := range rs {
		if i > 0 && r.Round <= rs[i-1].Round {
			t.Fatalf("the status lists round %d after round %d", r.Round, rs[i-1].Round)
		}
		if r.CaughtUp && (r.Loss != nil || r.Round < from || r.Round >= to || r.StateRoot == "") {
			t.Errorf("round %d caught up: loss %v, root %q, want no loss, a root, a round in [%d, %d)", r.Round, r.Loss, r.StateRoot, from, to)
		}
	}
	if st.NextRound < to {
		t.Fatalf("after catching up to round %d the status's next round is %d", to, st.NextRound)
	}
}

// newPeerIDs returns n fresh peer IDs.
func newPeerIDs(t *testing.T, n int) []peer.ID {
	t.Helper()
	ids := make([]peer.ID, n)
	for i := range ids {
		k, _, err := crypto.GenerateEd25519Key(nil)
		if err != nil {
			t.Fatal(err)
		}
		ids[i], _ = peer.IDFromPrivateKey(k)
	}
	return ids
}

// stakeLedger is a genesis ledger in which ids[i] stakes amounts[i].
func stakeLedger(t *testing.T, ids []peer.ID, amounts ...uint64) *incentives.State {
	t.Helper()
	var g incentives.Genesis
	for i, id := range ids {
		g.Stakes = append(g.Stakes, incentives.Stake{Peer: id.String(), Amount: amounts[i]})
	}
	led, err := incentives.NewState(incentives.Params{MinStake: 100, Reward: 10, JailRounds: 3, EvidenceWindow: 4}, g)
	if err != nil {
		t.Fatal(err)
	}
	return led
}
