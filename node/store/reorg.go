package store

import (
	"bytes"
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/incentives"
)

// KeptStates is how many rounds back the store keeps the ledger state each round started
// from, so that Reorg can close them again: the deepest repair a network spec allows.
const KeptStates = configs.MaxRepairDepth

var (
	// bucketStates: round (8 bytes) -> the ledger state at the start of that round, for
	// the last KeptStates rounds and the head.
	bucketStates = []byte("states")
	// bucketRoundEvents: round (8 bytes), sequence (4 bytes) -> the history key of an
	// event of that round, so that Reorg finds a round's events without a scan.
	bucketRoundEvents = []byte("round_events")
)

// Round is one committed round: its record, the ledger state it leads to, the events it
// caused, the signed shards of the contributions it includes (those the node holds), the
// node's own signed record of it (nil: none; see CommitSigned) and the node's vote on it
// (nil: none kept; see CommitRound).
type Round struct {
	Record *incentives.Record
	State  *incentives.State
	Events []incentives.Event
	Shards []Shard
	Signed []byte
	Vote   []byte
}

// Reorg replaces the stored rounds from round from on by rounds, in one transaction: the
// records, the evidence index entries and the history events of the replaced rounds are
// dropped, the ledger state of the start of round from is restored, and rounds are
// committed in order with their shards; the stored shards of the replaced rounds and the
// checkpoints after round from go too; rounds[0] closes round from, and the last is the new head. It
// returns after the transaction is on disk. The chain must hold: rounds[0] follows the
// ledger state round from started with (kept for the last KeptStates rounds), each
// round follows the one before, and each state is what its record leads to; otherwise
// ErrConflict and nothing is written.
func (s *Store) Reorg(from uint64, rounds ...Round) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == nil {
		return ErrNotInitialised
	}
	head := s.state.Round
	if len(rounds) == 0 || from > head || head-from > KeptStates {
		return fmt.Errorf("%w: reorg from round %d with %d rounds, head at round %d (at most %d back)", ErrConflict, from, len(rounds), head, KeptStates)
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		base, err := stateAt(tx, from)
		if err != nil {
			return err
		}
		if err := checkChain(base, rounds); err != nil {
			return err
		}
		for r := from; r < head; r++ {
			if err := dropRound(tx, r); err != nil {
				return err
			}
		}
		// The checkpoints that follow the replaced rounds are off the canonical state now.
		if err := dropCheckpointsAfter(tx, from); err != nil {
			return err
		}
		for _, r := range rounds {
			if err := writeRound(tx, r); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketMeta).Put(keyState, rounds[len(rounds)-1].State.Marshal())
	})
	s.afterCheckpoints()
	if err != nil {
		return fmt.Errorf("reorg from round %d: %w", from, err)
	}
	s.state = rounds[len(rounds)-1].State
	return nil
}

// checkChain checks that rounds follow base and one another, and that each state is what
// its record leads to.
func checkChain(base *incentives.State, rounds []Round) error {
	prev := base
	for _, r := range rounds {
		if err := follows(prev, r.Record, r.State); err != nil {
			return err
		}
		if err := checkShards(r.Record, r.Shards); err != nil {
			return fmt.Errorf("%w: %v", ErrConflict, err)
		}
		if err := checkSigned(r.Signed, r.Record); err != nil {
			return err
		}
		prev = r.State
	}
	return nil
}

// follows checks that rec follows the ledger state prev and that next is what it leads to.
func follows(prev *incentives.State, rec *incentives.Record, next *incentives.State) error {
	switch {
	case rec.Round != prev.Round || !bytes.Equal(rec.PrevRoot, prev.Head):
		return fmt.Errorf("%w: record %d after %x, ledger expects round %d after %x", ErrConflict, rec.Round, rec.PrevRoot, prev.Round, prev.Head)
	case next.Round != rec.Round+1 || !bytes.Equal(next.Head, rec.NewRoot):
		return fmt.Errorf("%w: the state given is not the one record %d leads to", ErrConflict, rec.Round)
	}
	return nil
}

// stateAt reads the kept ledger state of the start of round r.
func stateAt(tx *bolt.Tx, r uint64) (*incentives.State, error) {
	raw := tx.Bucket(bucketStates).Get(roundKey(r))
	if raw == nil {
		return nil, fmt.Errorf("%w: no ledger state of round %d is kept", ErrConflict, r)
	}
	st, err := incentives.DecodeState(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: kept ledger of round %d: %v", ErrCorrupt, r, err)
	}
	return st, nil
}

// writeRound writes one committed round: the record, the evidence it includes, the events
// (indexed by round) and the ledger state it leads to, kept for KeptStates rounds. The
// caller writes the current state (keyState).
func writeRound(tx *bolt.Tx, r Round) error {
	rec := r.Record
	if err := tx.Bucket(bucketRecords).Put(roundKey(rec.Round), rec.Marshal()); err != nil {
		return err
	}
	for i := range rec.Evidence {
		id := rec.Evidence[i].ID()
		if err := tx.Bucket(bucketEvidence).Put(id[:], rec.Evidence[i].Marshal()); err != nil {
			return err
		}
	}
	if err := putEvents(tx, r.Events); err != nil {
		return err
	}
	if err := putShards(tx, rec.Round, r.Shards); err != nil {
		return err
	}
	if err := putSigned(tx, rec.Round, r.Signed); err != nil {
		return err
	}
	if err := putVote(tx, rec.Round, r.Vote); err != nil {
		return err
	}
	return keepState(tx, r.State)
}

// keepState keeps st as the state of the start of its round and forgets those more than
// KeptStates rounds before it.
func keepState(tx *bolt.Tx, st *incentives.State) error {
	b := tx.Bucket(bucketStates)
	if err := b.Put(roundKey(st.Round), st.Marshal()); err != nil {
		return err
	}
	c := b.Cursor()
	for k, _ := c.First(); k != nil && st.Round > KeptStates && bytesToRound(k) < st.Round-KeptStates; k, _ = c.First() {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// dropRound forgets round r: its record, the evidence it included, its events and the
// state it led to.
func dropRound(tx *bolt.Tx, r uint64) error {
	if raw := tx.Bucket(bucketRecords).Get(roundKey(r)); raw != nil {
		rec, err := incentives.DecodeRecord(raw)
		if err != nil {
			return fmt.Errorf("%w: record %d: %v", ErrCorrupt, r, err)
		}
		for i := range rec.Evidence {
			id := rec.Evidence[i].ID()
			if err := tx.Bucket(bucketEvidence).Delete(id[:]); err != nil {
				return err
			}
		}
		if err := tx.Bucket(bucketRecords).Delete(roundKey(r)); err != nil {
			return err
		}
	}
	if err := dropEvents(tx, r); err != nil {
		return err
	}
	if err := deleteShards(tx, r); err != nil {
		return err
	}
	if err := tx.Bucket(bucketSigned).Delete(roundKey(r)); err != nil {
		return err
	}
	return tx.Bucket(bucketStates).Delete(roundKey(r + 1))
}

// dropEvents deletes the history events of round r through the round index.
func dropEvents(tx *bolt.Tx, r uint64) error {
	idx, hist := tx.Bucket(bucketRoundEvents), tx.Bucket(bucketHistory)
	prefix := roundKey(r)
	var keys [][]byte
	c := idx.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if err := hist.Delete(v); err != nil {
			return err
		}
		keys = append(keys, bytes.Clone(k))
	}
	for _, k := range keys {
		if err := idx.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// indexEvent records that the history key k holds event i of round r.
func indexEvent(tx *bolt.Tx, r uint64, i int, k []byte) error {
	return tx.Bucket(bucketRoundEvents).Put(binary.BigEndian.AppendUint32(roundKey(r), uint32(i)), k)
}
