package store

import (
	"bytes"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/node/checkpoint"
)

// StartAt puts a store that holds nothing but its genesis ledger at a checkpoint synced
// from peers (a late joiner), in one transaction: the checkpoint is kept as PutCheckpoint
// keeps it, with no local state, and its ledger st becomes the stored one and the state
// the checkpoint's round starts from. st must be the checkpoint's ledger (its round and
// its head the manifest's); a store past genesis, or st not the manifest's, is
// ErrConflict and nothing is written. Rounds are committed after it as after any head.
func (s *Store) StartAt(m *checkpoint.Manifest, chunks [][]byte, st *incentives.State) error {
	return s.startAt(m, chunks, st, false)
}

// JumpTo is StartAt for a store past genesis but behind the checkpoint (a node too far
// behind its peers to repair): in the same transaction every stored round is dropped
// (records, events, shards, signed records; votes stay) with every kept checkpoint, so
// that the store holds one lineage, from the checkpoint on. A checkpoint not past the
// store's head is ErrConflict.
func (s *Store) JumpTo(m *checkpoint.Manifest, chunks [][]byte, st *incentives.State) error {
	return s.startAt(m, chunks, st, true)
}

func (s *Store) startAt(m *checkpoint.Manifest, chunks [][]byte, st *incentives.State, jump bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.state == nil:
		return ErrNotInitialised
	case !jump && s.state.Round != 0, jump && st.Round <= s.state.Round:
		return fmt.Errorf("%w: starting at the checkpoint of round %d on a store at round %d", ErrConflict, m.Round, s.state.Round)
	case st.Round != m.Round || !bytes.Equal(st.Head, m.Root[:]):
		return fmt.Errorf("%w: the ledger given is not the checkpoint's of round %d", ErrConflict, m.Round)
	}
	put, err := checkpointPut(m, chunks, nil, 1)
	if err != nil {
		return err
	}
	head := s.state.Round
	err = s.db.Update(func(tx *bolt.Tx) error {
		if k, _ := tx.Bucket(bucketRecords).Cursor().First(); k != nil && !jump {
			return fmt.Errorf("%w: the store holds records", ErrConflict)
		}
		for r := uint64(0); jump && r < head; r++ {
			if err := dropRound(tx, r); err != nil {
				return err
			}
		}
		if err := dropCheckpointsAfter(tx, 0); err != nil {
			return err
		}
		if err := put(tx); err != nil {
			return err
		}
		if err := keepState(tx, st); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put(keyState, st.Marshal())
	})
	if err != nil {
		return fmt.Errorf("starting at the checkpoint of round %d: %w", m.Round, err)
	}
	s.state = st
	return nil
}
