package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
)

// shardsOf makes one fake shard for every CID the record lists.
func shardsOf(rec *incentives.Record) []Shard {
	var out []Shard
	for _, c := range rec.Contributions {
		for i := range c.Shards {
			out = append(out, Shard{Peer: c.Peer, Index: uint32(i), Data: fmt.Appendf(nil, "%d/%s/%d", rec.Round, c.Peer, i)})
		}
	}
	return out
}

// commitWithShards builds round st.Round and commits it with a shard per listed CID.
func commitWithShards(t *testing.T, s *Store, fx *incentivestest.Fixture) *incentives.Record {
	t.Helper()
	st, err := s.State()
	if err != nil {
		t.Fatal(err)
	}
	cs, _ := genRound(fx, st.Round)
	cl, err := st.Build(cs, nil, []byte("model"), fx.Checker())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(cl.Record, cl.State, cl.Events, shardsOf(cl.Record)...); err != nil {
		t.Fatal(err)
	}
	return cl.Record
}

// TestShardsCommittedAreReadBackByRoundAndPruned: the shards given with a commit are
// read back by round, after a reopen, sorted by peer and index; deleting a round drops it
// alone, pruning drops the rounds before the one named and keeps the rest.
func TestShardsCommittedAreReadBackByRoundAndPruned(t *testing.T) {
	s, path := openTestStore(t)
	fx := incentivestest.New("testnet", "run-1")
	var recs []*incentives.Record
	for range 3 {
		recs = append(recs, commitWithShards(t, s, fx))
	}
	s.Close()
	s, err := Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, rec := range recs {
		got, err := s.Shards(rec.Round)
		if err != nil {
			t.Fatal(err)
		}
		want := shardsOf(rec)
		if len(got) != len(want) {
			t.Fatalf("round %d: %d shards, want %d", rec.Round, len(got), len(want))
		}
		for i := range want {
			if got[i].Peer != want[i].Peer || got[i].Index != want[i].Index || !bytes.Equal(got[i].Data, want[i].Data) {
				t.Fatalf("round %d shard %d: %s/%d %q, want %s/%d %q", rec.Round, i, got[i].Peer, got[i].Index, got[i].Data, want[i].Peer, want[i].Index, want[i].Data)
			}
		}
	}
	if err := s.db.Update(func(tx *bolt.Tx) error { return deleteShards(tx, 1) }); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Shards(1); err != nil || len(got) != 0 {
		t.Fatalf("round 1 after deleteShards: %d shards, %v", len(got), err)
	}
	if got, _ := s.Shards(2); len(got) != len(shardsOf(recs[2])) {
		t.Fatalf("round 2 after deleting round 1: %d shards", len(got))
	}
	if err := s.PruneShards(2); err != nil {
		t.Fatal(err)
	}
	for r, want := range []int{0, 0, len(shardsOf(recs[2]))} {
		if got, err := s.Shards(uint64(r)); err != nil || len(got) != want {
			t.Errorf("round %d after pruning to 2: %d shards (%v), want %d", r, len(got), err, want)
		}
	}
}

// TestCommitRefusesShardsTheRecordDoesNotList: a shard of a peer the record does not list,
// at an index past its CIDs, or oversized is refused with ErrConflict and nothing of the
// round is written.
func TestCommitRefusesShardsTheRecordDoesNotList(t *testing.T) {
	s, _ := openTestStore(t)
	defer s.Close()
	fx := incentivestest.New("testnet", "run-1")
	st, _ := s.State()
	cs, _ := genRound(fx, st.Round)
	cl, err := st.Build(cs, nil, []byte("model"), fx.Checker())
	if err != nil {
		t.Fatal(err)
	}
	c := cl.Record.Contributions[0]
	for name, bad := range map[string]Shard{
		"unlisted peer": {Peer: testID("nobody"), Index: 0, Data: []byte("x")},
		"index past":    {Peer: c.Peer, Index: uint32(len(c.Shards)), Data: []byte("x")},
		"oversized":     {Peer: c.Peer, Index: 0, Data: make([]byte, MaxShardBytes+1)},
		"empty":         {Peer: c.Peer, Index: 0},
	} {
		if err := s.Commit(cl.Record, cl.State, cl.Events, bad); !errors.Is(err, ErrConflict) {
			t.Errorf("%s: %v, want ErrConflict", name, err)
		}
	}
	if got, _ := s.State(); got.Round != st.Round {
		t.Fatalf("ledger moved to round %d on a refused commit", got.Round)
	}
}

// TestTamperedShardEntryIsAnErrorNamingTheRound: a stored shard entry edited on disk (an
// oversized value, a key that no commit writes) is an error wrapping ErrShardEntry that
// names the round, not a panic.
func TestTamperedShardEntryIsAnErrorNamingTheRound(t *testing.T) {
	for name, tamper := range map[string]func(b *bolt.Bucket) error{
		"oversized value": func(b *bolt.Bucket) error {
			k, _ := shardKey(1, testID("A"), 0)
			return b.Put(k, make([]byte, MaxShardBytes+1))
		},
		"short key": func(b *bolt.Bucket) error { return b.Put(append(roundKey(1), 0), []byte("x")) },
		"peer length past the key": func(b *bolt.Bucket) error {
			return b.Put(append(roundKey(1), 0xff, 0xff, 'p', 0, 0, 0, 0), []byte("x"))
		},
	} {
		t.Run(name, func(t *testing.T) {
			s, _ := openTestStore(t)
			defer s.Close()
			fx := incentivestest.New("testnet", "run-1")
			commitWithShards(t, s, fx)
			commitWithShards(t, s, fx)
			if err := s.db.Update(func(tx *bolt.Tx) error { return tamper(tx.Bucket(bucketShards)) }); err != nil {
				t.Fatal(err)
			}
			_, err := s.Shards(1)
			if !errors.Is(err, ErrShardEntry) || !strings.Contains(err.Error(), "round 1") {
				t.Fatalf("%v, want ErrShardEntry naming round 1", err)
			}
			if _, err := s.Shards(0); err != nil {
				t.Errorf("round 0, untouched: %v", err)
			}
		})
	}
}

// FuzzParseShardKey: any key of a round's range parses or is refused without a panic, and
// a key that parses is the one shardKey makes of what it parsed to.
func FuzzParseShardKey(f *testing.F) {
	k, _ := shardKey(3, testID("A"), 7)
	f.Add(k)
	f.Add(append(roundKey(1), 0, 0))
	f.Fuzz(func(t *testing.T, k []byte) {
		peer, index, ok := parseShardKey(k)
		if !ok {
			return
		}
		again, err := shardKey(binary.BigEndian.Uint64(k[:8]), peer, index)
		if err != nil || !bytes.Equal(again, k) {
			t.Fatalf("key %x parses to %q/%d, which makes %x (%v)", k, peer, index, again, err)
		}
	})
}

// TestReorgReplacesTheStoredShards: the rounds a reorg closes again keep the shards given
// with them, not the replaced rounds', so that a restart replays the repaired rounds; the
// rounds before it keep theirs, and the checkpoints after its first round go.
func TestReorgReplacesTheStoredShards(t *testing.T) {
	fx := incentivestest.New("testnet", "run-1")
	s, _ := openTestStore(t)
	defer s.Close()
	old := buildChain(t, fx, testGenesis(t), 4, 0)
	for _, r := range old.rounds {
		if err := s.Commit(r.Record, r.State, r.Events, shardsOf(r.Record)...); err != nil {
			t.Fatal(err)
		}
	}
	putCkpt(t, s, testCheckpoint(t, 3, 0), []byte("local"), 3)
	repl := buildChain(t, fx, old.rounds[1].State, 2, 1)
	for i := range repl.rounds {
		repl.rounds[i].Shards = shardsOf(repl.rounds[i].Record)
	}
	if err := s.Reorg(2, repl.rounds...); err != nil {
		t.Fatal(err)
	}
	for _, r := range append(old.rounds[:2:2], repl.rounds...) {
		got, err := s.Shards(r.Record.Round)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkShards(r.Record, got); err != nil || len(got) != len(shardsOf(r.Record)) {
			t.Fatalf("round %d: %d shards stored (%v), the record lists %d", r.Record.Round, len(got), err, len(shardsOf(r.Record)))
		}
	}
	if kept, err := s.Checkpoints(); err != nil || len(kept) != 0 {
		t.Fatalf("checkpoints after the reorg's first round: %v (%v), want none", kept, err)
	}
}
