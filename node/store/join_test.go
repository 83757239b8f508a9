package store

import (
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

// TestJumpToACheckpointDropsTheRoundsBefore: a store past genesis but behind a synced
// checkpoint jumps to it in one transaction: its rounds and checkpoints before are gone,
// its votes stay, and the checkpoint's ledger is the stored one. A checkpoint not past its
// head is ErrConflict.
func TestJumpToACheckpointDropsTheRoundsBefore(t *testing.T) {
	s, _ := openCkptStore(t)
	if err := s.Init(testGenesis(t)); err != nil {
		t.Fatal(err)
	}
	fx := incentivestest.New("testnet", "run-1")
	st, _ := s.State()
	cs, _ := genRound(fx, 0)
	cl, err := st.Build(cs, nil, []byte("model"), fx.Checker())
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
	early := testCheckpoint(t, 1, 0)
	m1, chunks1 := checkpoint.Split(early, checkpoint.MinChunkSize)
	if err := s.JumpTo(m1, chunks1, early.Ledger); !errors.Is(err, ErrConflict) {
		t.Fatalf("a checkpoint at the head: %v, want ErrConflict", err)
	}
	c := testCheckpoint(t, 6, 0)
	m, chunks := checkpoint.Split(c, checkpoint.MinChunkSize)
	if err := s.JumpTo(m, chunks, c.Ledger); err != nil {
		t.Fatal(err)
	}
	if rec, _ := s.Record(0); rec != nil {
		t.Fatal("round 0 is still stored after the jump")
	}
	if got, _ := s.Vote(0); got == nil {
		t.Fatal("the vote of round 0 was dropped")
	}
	if st, _ := s.State(); st.Round != 6 {
		t.Fatalf("after the jump the store is at round %d", st.Round)
	}
	if list, _ := s.Checkpoints(); len(list) != 1 || list[0].Round != 6 {
		t.Fatalf("checkpoints kept after the jump: %v", list)
	}
}
