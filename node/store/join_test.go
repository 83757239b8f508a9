package store

import (
	"bytes"
	"errors"
	"testing"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
	"github.com/lowband/lowband/node/checkpoint"
)

// TestStartAtACheckpointOnlyFromGenesis: a store at genesis starts at a synced checkpoint
// in one transaction: the checkpoint is kept and its ledger is the stored one, the state
// its round starts from, and it reopens so. A ledger that is not the checkpoint's, or a
// store already past genesis, is ErrConflict and nothing changes.
func TestStartAtACheckpointOnlyFromGenesis(t *testing.T) {
	s, path := openCkptStore(t)
	if err := s.Init(testGenesis(t)); err != nil {
		t.Fatal(err)
	}
	c := testCheckpoint(t, 6, 0)
	m, chunks := checkpoint.Split(c, checkpoint.MinChunkSize)
	other := *c.Ledger
	other.Round = 5
	if err := s.StartAt(m, chunks, &other); !errors.Is(err, ErrConflict) {
		t.Fatalf("another ledger: %v, want ErrConflict", err)
	}
	if st, _ := s.State(); st.Round != 0 {
		t.Fatalf("a refused start moved the store to round %d", st.Round)
	}
	if err := s.StartAt(m, chunks, c.Ledger); err != nil {
		t.Fatal(err)
	}
	if err := s.StartAt(m, chunks, c.Ledger); !errors.Is(err, ErrConflict) {
		t.Fatalf("a second start: %v, want ErrConflict", err)
	}
	s.Close()
	s2, err := Open(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	st, err := s2.State()
	if err != nil || st.Round != 6 || string(st.Head) != string(m.Root[:]) {
		t.Fatalf("reopened at %v (%v), want the checkpoint's ledger of round 6", st, err)
	}
	got, _, err := s2.LoadCheckpoint(6, ckptLimits())
	if err != nil || got.Root() != m.Root {
		t.Fatalf("the checkpoint kept: %v", err)
	}
}

// TestJumpToACheckpointDropsTheRoundsBefore: a store past genesis jumps to a synced
// checkpoint and the rounds replayed after it in one transaction: its rounds and
// checkpoints before are gone, its votes stay, and the checkpoint's ledger (or the last
// round's) is the stored one. Its head never moves back: a checkpoint before its head
// with no rounds that reach it is ErrConflict and nothing changes; with them it is a
// rewind onto the peers' lineage (the store's own rounds from the checkpoint on are
// replaced). A lineage without a checkpoint starts at round 0.
func TestJumpToACheckpointDropsTheRoundsBefore(t *testing.T) {
	s, _ := openCkptStore(t)
	if err := s.Init(testGenesis(t)); err != nil {
		t.Fatal(err)
	}
	fx := incentivestest.New("testnet", "run-1")
	for r := range 3 {
		st, _ := s.State()
		cs, _ := genRound(fx, uint64(r))
		cl, err := st.Build(cs, nil, []byte("own lineage"), fx.Checker())
		if err != nil {
			t.Fatal(err)
		}
		vote, err := incentives.SignRecord(incentivestest.Identity("a"), "net", "run", cl.Record)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.CommitRound(Round{Record: cl.Record, State: cl.State, Events: cl.Events, Shards: shardsOf(cl.Record), Vote: vote.Marshal()}); err != nil {
			t.Fatal(err)
		}
	}
	own, _ := s.Record(2)

	early := testCheckpoint(t, 1, 0)
	m1, chunks1 := checkpoint.Split(early, checkpoint.MinChunkSize)
	if err := s.JumpTo(m1, chunks1, early.Ledger); !errors.Is(err, ErrConflict) {
		t.Fatalf("a checkpoint before the head with no rounds after it: %v, want ErrConflict", err)
	}
	if err := s.JumpTo(nil, nil, early.Ledger); !errors.Is(err, ErrConflict) {
		t.Fatalf("no checkpoint and a ledger of round 1: %v, want ErrConflict", err)
	}
	if st, _ := s.State(); st.Round != 3 {
		t.Fatalf("a refused jump moved the store to round %d", st.Round)
	}

	// The peers' lineage: the checkpoint of round 1, then rounds 1 and 2 closed from it.
	var theirs []Round
	st := early.Ledger
	for r := uint64(1); r < 3; r++ {
		cs, _ := genRound(fx, r)
		cl, err := st.Build(cs, nil, []byte("their lineage"), fx.Checker())
		if err != nil {
			t.Fatal(err)
		}
		theirs = append(theirs, Round{Record: cl.Record, State: cl.State, Events: cl.Events, Shards: shardsOf(cl.Record)})
		st = cl.State
	}
	if err := s.JumpTo(m1, chunks1, early.Ledger, theirs[:1]...); !errors.Is(err, ErrConflict) {
		t.Fatalf("a rewind whose rounds stop before the head: %v, want ErrConflict", err)
	}
	if err := s.JumpTo(m1, chunks1, early.Ledger, theirs[1:]...); !errors.Is(err, ErrConflict) {
		t.Fatalf("rounds that do not follow the checkpoint: %v, want ErrConflict", err)
	}
	if err := s.JumpTo(m1, chunks1, early.Ledger, theirs...); err != nil {
		t.Fatal(err)
	}
	if rec, _ := s.Record(0); rec != nil {
		t.Fatal("round 0 is still stored after the rewind")
	}
	if rec, _ := s.Record(2); rec == nil || bytes.Equal(rec.Marshal(), own.Marshal()) || !bytes.Equal(rec.Marshal(), theirs[1].Record.Marshal()) {
		t.Fatal("round 2 is not the peers' after the rewind")
	}
	for r := range uint64(3) {
		if got, _ := s.Vote(r); got == nil {
			t.Fatalf("the vote of round %d was dropped", r)
		}
	}
	if st, _ := s.State(); st.Round != 3 || !bytes.Equal(st.Head, theirs[1].Record.NewRoot) {
		t.Fatalf("after the rewind the store is at round %d, head %x", st.Round, st.Head)
	}
	if list, _ := s.Checkpoints(); len(list) != 1 || list[0].Round != 1 {
		t.Fatalf("checkpoints kept after the rewind: %v", list)
	}

	c := testCheckpoint(t, 6, 0)
	m, chunks := checkpoint.Split(c, checkpoint.MinChunkSize)
	if err := s.JumpTo(m, chunks, c.Ledger); err != nil {
		t.Fatal(err)
	}
	if rec, _ := s.Record(2); rec != nil {
		t.Fatal("round 2 is still stored after the jump")
	}
	if st, _ := s.State(); st.Round != 6 {
		t.Fatalf("after the jump the store is at round %d", st.Round)
	}
	if list, _ := s.Checkpoints(); len(list) != 1 || list[0].Round != 6 {
		t.Fatalf("checkpoints kept after the jump: %v", list)
	}
}
