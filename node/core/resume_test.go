package core_test

import (
	"slices"
	"testing"

	"github.com/lowband/lowband/node/core"
	"github.com/lowband/lowband/verify"
)

// TestResumedCoreSignsNoShardOfTheRoundsItSkips: a Core resumed at round 2 (a restart
// that may have signed shards of rounds 0 and 1 before it stopped) starts no local work
// until round 0 closes, signs no shard of rounds 0 or 1, closes those rounds on the others'
// contributions with the same roots as they do, and then trains and contributes from
// round 2 on.
func TestResumedCoreSignsNoShardOfTheRoundsItSkips(t *testing.T) {
	// d unstaked: nobody waits for its missing contributions to rounds 0 and 1, and it
	// waits for nobody but the others.
	s := newSwarm(t, 1, ledgerParams(), four, []uint64{100, 100, 100, 0})
	d := s.node("d")
	if err := d.core.Resume(2, nil); err != nil {
		t.Fatal(err)
	}
	s.start()
	if d.train != nil {
		t.Fatalf("resumed at round 2, Start asked for local work of round %d", d.train.Round)
	}
	for range 7 {
		s.step(everyone)
	}
	var rounds []uint64
	for _, data := range s.shards[d.id] {
		sh, err := verify.UnmarshalShard(data, maxPayload)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(rounds, sh.Header.Round) {
			rounds = append(rounds, sh.Header.Round)
		}
	}
	if len(rounds) == 0 || rounds[0] != 2 {
		t.Fatalf("the resumed core signed shards of rounds %v, want none before 2", rounds)
	}
	a := s.node("a")
	if len(d.sums) < len(a.sums) {
		t.Fatalf("d closed %d rounds, a %d", len(d.sums), len(a.sums))
	}
	d.sums = d.sums[:len(a.sums)] // d closes each round as soon as it may: it has no own work to wait for
	sameRoots(t, s.nodes)
	for _, sum := range d.sums {
		if in := slices.Contains(sum.Included, d.id); in != (sum.Round >= 2) {
			t.Errorf("round %d: d included %v", sum.Round, in)
		}
	}
}

// restart replaces node name's core by the one a restart on its home makes: New at its
// head (the state and ledger of its last committed round), Resume past the rounds it may
// have signed shards for (head + delay + 1). The others' shards of the open rounds come to
// it again, as gossip and fetches bring them to a restarted node.
func (s *swarm) restart(name string) *node {
	s.t.Helper()
	n := s.node(name)
	st := n.core.State()
	n.core, n.train = s.newCore(name, st, n.core.Ledger()), nil
	if err := n.core.Resume(st.Round+2, nil); err != nil {
		s.t.Fatal(err)
	}
	rd, err := n.core.Start(s.now)
	s.handle(n, rd, err)
	for _, from := range s.nodes {
		for _, data := range s.shards[from.id] {
			sh, err := verify.UnmarshalShard(data, maxPayload)
			if err != nil {
				s.t.Fatal(err)
			}
			if from != n && sh.Header.Round >= st.Round {
				s.send(delivery{from: from, to: n, msg: core.Message{Kind: core.KindShards, Data: data}})
			}
		}
	}
	return n
}

// TestRestartedCoreClosesSkippedRoundsWithoutWaitingForItself: a staked node restarted
// at its head closes the rounds it skips as soon as every other staked contribution is
// in, not at deadline_max: it expects no contribution of its own there.
func TestRestartedCoreClosesSkippedRoundsWithoutWaitingForItself(t *testing.T) {
	s := newSwarm(t, 2, ledgerParams(), four, []uint64{100, 100, 100, 100})
	s.start()
	for range 4 {
		s.step(everyone)
	}
	head, before := s.node("d").core.State().Round, len(s.node("d").sums)
	d := s.restart("d")
	for range 3 {
		s.step(everyone)
	}
	var closed []uint64
	for _, sum := range d.sums[before:] {
		closed = append(closed, sum.Round)
	}
	if !slices.Contains(closed, head) || !slices.Contains(closed, head+1) {
		t.Fatalf("restarted at round %d, d closed rounds %v within 3 s of its restart (deadline_max %v): it waits for itself", head, closed, deadlineConfig.Max)
	}
}

// TestRestartedCoreTakesBackItsOwnContributionOfSkippedRounds: the others included the
// contributions a node signed before it stopped; restarted, it closed those rounds without
// them, and its peers' records make it fetch its own shards by CID and repair: it holds
// their root again within two rounds.
func TestRestartedCoreTakesBackItsOwnContributionOfSkippedRounds(t *testing.T) {
	s := newSwarm(t, 2, ledgerParams(), four, []uint64{100, 100, 100, 100})
	s.start()
	for range 4 {
		s.step(everyone)
	}
	d := s.restart("d")
	for range 12 { // the others close the first round d skipped without signing at their adaptive deadline
		s.step(everyone)
	}
	if len(d.repairs) == 0 {
		t.Fatalf("d made no repair; it asked for %d CIDs", len(d.cidFetch))
	}
	a := s.node("a")
	da, aa := committed(d), committed(a)
	for r, root := range aa {
		if got, ok := da[r]; ok && got != root {
			t.Errorf("round %d: d holds root %x, a %x", r, got[:4], root[:4])
		}
	}
	if ag := d.core.Agreement(); !ag.Agrees || ag.Waiting != 0 {
		t.Fatalf("d: agrees %v, waiting for %d CIDs", ag.Agrees, ag.Waiting)
	}
}

// committed is the state root n holds for each round it closed: as closed, then as
// repaired.
func committed(n *node) map[uint64][32]byte {
	out := map[uint64][32]byte{}
	for _, sum := range n.sums {
		out[sum.Round] = sum.StateRoot
	}
	for _, rp := range n.repairs {
		for _, c := range rp.Commits {
			out[c.Record.Round] = [32]byte(c.Record.NewRoot)
		}
	}
	return out
}
