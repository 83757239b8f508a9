package core_test

import (
	"bytes"
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
	"github.com/lowband/lowband/node/core"
	"github.com/lowband/lowband/training/round"
)

// replaySnapshots closes n's committed rounds again from θ_0 and the genesis ledger, as a
// restart's replay does from the stored records and shards, and returns the snapshots of
// the last depth of them.
func (s *swarm) replaySnapshots(n *node, genesis *incentives.State, depth int) []core.Snapshot {
	s.t.Helper()
	st, led := round.State{Params: theta0()}, genesis
	var snaps []core.Snapshot
	for _, cm := range n.commits {
		rec := cm.Record
		snap := core.Snapshot{Pre: st, Ledger: led, Record: rec}
		var peers []string
		for _, e := range rec.Contributions {
			snap.Contributions = append(snap.Contributions, s.contribution(e.Peer, rec.Round))
			peers = append(peers, e.Peer)
		}
		next, _, err := round.Step(roundConfig(n.id), st, snap.Contributions, core.WeightsOf(led, peers))
		if err != nil {
			s.t.Fatal(err)
		}
		if root := next.Root(); !bytes.Equal(root[:], rec.ModelRoot) {
			s.t.Fatalf("round %d does not replay", rec.Round)
		}
		if led, _, err = led.Apply(rec, s.fx.Checker()); err != nil {
			s.t.Fatal(err)
		}
		st = next
		snaps = append(snaps, snap)
	}
	return snaps[max(0, len(snaps)-depth):]
}

// dropRecords loses the records of round r to the nodes in to.
func dropRecords(r uint64, to ...*node) func(delivery) bool {
	return func(d delivery) bool {
		if d.msg.Kind != core.KindRecords || !containsNode(to, d.to) {
			return false
		}
		_, rec, err := incentives.DecodeSignedRecord(d.msg.Data)
		return err == nil && rec.Round == r
	}
}

func containsNode(ns []*node, n *node) bool {
	for _, m := range ns {
		if m == n {
			return true
		}
	}
	return false
}

// repairAfterRestart: d misses c's shards and everyone's records of round k and closes k
// without c; then, restarted (seeded from a replay of its commits) or not, it gets the
// records of k. It returns the repairs d made of round k.
func repairAfterRestart(t *testing.T, restart bool) (*swarm, []*core.Repair) {
	const k = 2
	s := newSwarm(t, 3, ledgerParams(), four, []uint64{100, 100, 100, 100})
	c, d := s.node("c"), s.node("d")
	s.drop = anyOf(dropShards(k, c, d), dropRecords(k, d))
	s.start()
	for i := 0; d.core.State().Round <= k; i++ {
		if i == 100 {
			t.Fatal("d never closed round k")
		}
		s.step(everyone)
	}
	s.drop = nil
	if restart {
		genesis, err := incentives.NewState(ledgerParams(), incentives.Genesis{Stakes: []incentives.Stake{
			{Peer: incentivestest.PeerID("a"), Amount: 100}, {Peer: incentivestest.PeerID("b"), Amount: 100},
			{Peer: incentivestest.PeerID("c"), Amount: 100}, {Peer: incentivestest.PeerID("d"), Amount: 100}}})
		if err != nil {
			t.Fatal(err)
		}
		snaps := s.replaySnapshots(d, genesis, core.DefaultDepth)
		s.restart("d")
		if err := d.core.Seed(snaps); err != nil {
			t.Fatal(err)
		}
	}
	before := len(d.repairs)
	for _, from := range []*node{s.node("a"), s.node("b"), c} {
		for _, data := range s.records[from.id] {
			if _, rec, err := incentives.DecodeSignedRecord(data); err == nil && rec.Round == k {
				s.send(delivery{from: from, to: d, msg: core.Message{Kind: core.KindRecords, Data: data}})
			}
		}
	}
	s.flush()
	return s, d.repairs[before:]
}

// TestSeededCoreRepairsARoundBeforeItsRestart: a node that closed round k without a
// contribution the others included, and restarted before their records of k came, repairs
// k from the snapshots its replay seeds the new core with, to the same record, byte for
// byte, as the node that never stopped, and to the root the others hold.
func TestSeededCoreRepairsARoundBeforeItsRestart(t *testing.T) {
	_, stayed := repairAfterRestart(t, false)
	s, restarted := repairAfterRestart(t, true)
	if len(stayed) == 0 {
		t.Fatal("the node that never stopped made no repair of round k")
	}
	if len(restarted) == 0 {
		t.Fatal("the restarted node made no repair of round k")
	}
	want, got := stayed[0].Commits[0].Record, restarted[0].Commits[0].Record
	if !bytes.Equal(want.Marshal(), got.Marshal()) {
		t.Fatalf("round %d repaired to root %x after a restart, %x without", got.Round, got.NewRoot[:4], want.NewRoot[:4])
	}
	if a := committed(s.node("a"))[got.Round]; !bytes.Equal(a[:], got.NewRoot) {
		t.Fatalf("round %d repaired to root %x, a holds %x", got.Round, got.NewRoot[:4], a[:4])
	}
}

// TestSeedRefusesSnapshotsThatDoNotLeadToTheState: snapshots out of order, not ending at
// the core's head, with a contribution their record does not list, or given after events,
// are refused with ErrSeed.
func TestSeedRefusesSnapshotsThatDoNotLeadToTheState(t *testing.T) {
	s := newSwarm(t, 3, ledgerParams(), four, []uint64{100, 100, 100, 100})
	d := s.node("d")
	s.start()
	for d.core.State().Round < 3 {
		s.step(everyone)
	}
	genesis, err := incentives.NewState(ledgerParams(), incentives.Genesis{Stakes: []incentives.Stake{
		{Peer: incentivestest.PeerID("a"), Amount: 100}, {Peer: incentivestest.PeerID("b"), Amount: 100},
		{Peer: incentivestest.PeerID("c"), Amount: 100}, {Peer: incentivestest.PeerID("d"), Amount: 100}}})
	if err != nil {
		t.Fatal(err)
	}
	snaps := s.replaySnapshots(d, genesis, core.DefaultDepth)
	fresh := func() *core.Core { return s.newCore("d", d.core.State(), d.core.Ledger()) }
	notListed := slices.Clone(snaps)
	notListed[1].Contributions = append(slices.Clone(notListed[1].Contributions), s.contribution(d.id, 2))
	notListed[1].Contributions[len(notListed[1].Contributions)-1].Peer = incentivestest.PeerID("x")
	for name, bad := range map[string][]core.Snapshot{
		"out of order":   {snaps[0], snaps[2], snaps[1]},
		"short of head":  snaps[:len(snaps)-1],
		"not listed":     notListed,
		"another layout": {snaps[0], snaps[1], {Pre: round.State{Round: 2}, Ledger: snaps[2].Ledger, Record: snaps[2].Record}},
	} {
		if err := fresh().Seed(bad); !errors.Is(err, core.ErrSeed) {
			t.Errorf("%s: %v, want ErrSeed", name, err)
		}
	}
	if err := d.core.Seed(snaps); !errors.Is(err, core.ErrSeed) {
		t.Errorf("seeded after events: %v, want ErrSeed", err)
	}
	if err := fresh().Seed(snaps); err != nil {
		t.Errorf("the replay's snapshots: %v", err)
	}
}

// lineage is n's records as they stand: those it closed, each replaced by the last
// repair that closed its round again.
func lineage(n *node) []*incentives.Record {
	var out []*incentives.Record
	for _, cm := range n.commits {
		out = append(out, cm.Record)
	}
	for _, rp := range n.repairs {
		for _, cm := range rp.Commits {
			out[cm.Record.Round] = cm.Record
		}
	}
	return out
}

// replayRecords is replaySnapshots over the given records.
func (s *swarm) replayRecords(n *node, genesis *incentives.State, recs []*incentives.Record, depth int) []core.Snapshot {
	s.t.Helper()
	saved := n.commits
	n.commits = nil
	for _, rec := range recs {
		n.commits = append(n.commits, &core.Commit{Record: rec})
	}
	defer func() { n.commits = saved }()
	return s.replaySnapshots(n, genesis, depth)
}

// TestRestartAfterARepairResendsTheVoteItPublished: a node closes round k without a
// contribution the others include, publishes that record (its vote), and repairs k when
// their records come. Restarted, with the repaired lineage replayed and the votes it
// kept, it resends for k exactly the bytes it published, never a record of the repaired
// list: that would be a second, different vote for the round.
func TestRestartAfterARepairResendsTheVoteItPublished(t *testing.T) {
	const k = 2
	s, repairs := repairAfterRestart(t, false)
	if len(repairs) == 0 {
		t.Fatal("no repair of round k")
	}
	d := s.node("d")
	votes := map[uint64][]byte{}
	for _, data := range s.records[d.id] {
		if _, rec, err := incentives.DecodeSignedRecord(data); err == nil && votes[rec.Round] == nil {
			votes[rec.Round] = data
		}
	}
	genesis, err := incentives.NewState(ledgerParams(), incentives.Genesis{Stakes: []incentives.Stake{
		{Peer: incentivestest.PeerID("a"), Amount: 100}, {Peer: incentivestest.PeerID("b"), Amount: 100},
		{Peer: incentivestest.PeerID("c"), Amount: 100}, {Peer: incentivestest.PeerID("d"), Amount: 100}}})
	if err != nil {
		t.Fatal(err)
	}
	recs := lineage(d)
	snaps := s.replayRecords(d, genesis, recs, core.DefaultDepth)
	for i := range snaps {
		snaps[i].Vote = votes[snaps[i].Record.Round]
	}
	st := d.core.State()
	s.restart("d")
	if err := d.core.Seed(snaps); err != nil {
		t.Fatal(err)
	}
	// A record of the round after the head that does not follow d's state: d resends
	// its records of the window.
	parted := &incentives.Record{Version: 1, Round: st.Round, PrevRoot: bytes.Repeat([]byte{0xaa}, 32),
		ModelRoot: bytes.Repeat([]byte{1}, 32), NewRoot: bytes.Repeat([]byte{2}, 32)}
	sr, err := incentives.SignRecord(incentivestest.Identity("a"), testNetwork, testRun, parted)
	if err != nil {
		t.Fatal(err)
	}
	rd, err := d.core.Record(s.now, sr, parted)
	if err != nil {
		t.Fatal(err)
	}
	resent := map[uint64][]byte{}
	for _, m := range rd.Publish {
		if _, rec, err := incentives.DecodeSignedRecord(m.Data); m.Kind == core.KindRecords && err == nil {
			resent[rec.Round] = m.Data
		}
	}
	if resent[k] == nil {
		t.Fatalf("no record of round %d resent (resent rounds %v)", k, slices.Collect(maps.Keys(resent)))
	}
	if !bytes.Equal(resent[k], votes[k]) {
		_, rec, _ := incentives.DecodeSignedRecord(resent[k])
		_, vote, _ := incentives.DecodeSignedRecord(votes[k])
		t.Fatalf("round %d: resent a record of %d contributions, root %x; it voted %d contributions, root %x",
			k, len(rec.Contributions), rec.NewRoot[:4], len(vote.Contributions), vote.NewRoot[:4])
	}
}
