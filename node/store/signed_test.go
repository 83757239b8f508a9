package store

import (
	"bytes"
	"errors"
	"testing"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
)

// TestSignedRecordKeptOnlyForTheRecordCommitted: the node's signed record of a round is
// kept with its commit and read back; one that wraps another record, or that does not
// decode, refuses the commit (ErrConflict) and nothing is written.
func TestSignedRecordKeptOnlyForTheRecordCommitted(t *testing.T) {
	s, _ := openTestStore(t)
	defer s.Close()
	fx := incentivestest.New("testnet", "run-1")
	st, _ := s.State()
	cs, _ := genRound(fx, 0)
	cl, err := st.Build(cs, nil, []byte("model"), fx.Checker())
	if err != nil {
		t.Fatal(err)
	}
	key := incentivestest.Identity("a")
	other := *cl.Record
	other.ModelRoot = []byte("another model")
	bad, err := incentives.SignRecord(key, "net", "run", &other)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"another record": bad.Marshal(), "garbage": []byte("x")} {
		if err := s.CommitSigned(data, cl.Record, cl.State, cl.Events, shardsOf(cl.Record)...); !errors.Is(err, ErrConflict) {
			t.Errorf("%s: %v, want ErrConflict", name, err)
		}
	}
	if got, err := s.Signed(0); err != nil || got != nil {
		t.Fatalf("after refusals: %d bytes kept (%v)", len(got), err)
	}
	if rec, _ := s.Record(0); rec != nil {
		t.Fatal("a refused commit stored its record")
	}
	good, err := incentives.SignRecord(key, "net", "run", cl.Record)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CommitSigned(good.Marshal(), cl.Record, cl.State, cl.Events, shardsOf(cl.Record)...); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Signed(0); err != nil || !bytes.Equal(got, good.Marshal()) {
		t.Fatalf("read back %d bytes (%v), want the %d kept", len(got), err, len(good.Marshal()))
	}
}

// TestVoteKeptThroughAReorgOfItsRound: the node's vote on a round is kept with its commit
// and stays, the same bytes, when a Reorg replaces the round with another record (the
// node voted once); a vote of another round refuses the commit, and so does a second,
// different vote on the round (ErrConflict).
func TestVoteKeptThroughAReorgOfItsRound(t *testing.T) {
	s, _ := openTestStore(t)
	defer s.Close()
	fx := incentivestest.New("testnet", "run-1")
	st, _ := s.State()
	cs, _ := genRound(fx, 0)
	cl, err := st.Build(cs, nil, []byte("model"), fx.Checker())
	if err != nil {
		t.Fatal(err)
	}
	key := incentivestest.Identity("a")
	vote, err := incentives.SignRecord(key, "net", "run", cl.Record)
	if err != nil {
		t.Fatal(err)
	}
	later := *cl.Record
	later.Round = 5
	wrong, err := incentives.SignRecord(key, "net", "run", &later)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CommitRound(Round{Record: cl.Record, State: cl.State, Events: cl.Events, Vote: wrong.Marshal()}); !errors.Is(err, ErrConflict) {
		t.Fatalf("a vote of round 5 kept with round 0: %v, want ErrConflict", err)
	}
	if err := s.CommitRound(Round{Record: cl.Record, State: cl.State, Events: cl.Events, Shards: shardsOf(cl.Record), Vote: vote.Marshal()}); err != nil {
		t.Fatal(err)
	}
	again, err := st.Build(cs[:1], nil, []byte("model 2"), fx.Checker())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Reorg(0, Round{Record: again.Record, State: again.State, Events: again.Events}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Vote(0); err != nil || !bytes.Equal(got, vote.Marshal()) {
		t.Fatalf("after the reorg: vote of %d bytes (%v), want the %d voted", len(got), err, len(vote.Marshal()))
	}
	if got, _ := s.Vote(1); got != nil {
		t.Fatalf("a vote kept for round 1, never voted")
	}
	// A second, different vote on round 0 is never kept, whatever path would commit it
	// (here a reorg that carries one): the node voted once.
	second, err := incentives.SignRecord(key, "net", "run", again.Record)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Reorg(0, Round{Record: again.Record, State: again.State, Events: again.Events, Vote: second.Marshal()}); !errors.Is(err, ErrConflict) {
		t.Fatalf("a second vote on round 0: %v, want ErrConflict", err)
	}
	if err := s.Reorg(0, Round{Record: again.Record, State: again.State, Events: again.Events, Vote: vote.Marshal()}); err != nil {
		t.Fatalf("the same vote again: %v", err)
	}
	if got, _ := s.Vote(0); !bytes.Equal(got, vote.Marshal()) {
		t.Fatal("the vote kept changed")
	}
}
