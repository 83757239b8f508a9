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
	return s.startAt(m, chunks, st, false, nil)
}

// JumpTo puts a store past genesis on a lineage synced from peers (a node too far behind
// them to repair, or whose own lineage parted from theirs before its repair window), in
// one transaction: every stored round (records, events, shards, signed records; votes
// stay) and every kept checkpoint are dropped, the checkpoint m is kept as PutCheckpoint
// keeps it, with no local state (m nil: none, the lineage starts at genesis, and st must be
// of round 0), and rounds, which must follow st and one another (Reorg's chain), are
// committed after it. The store's head never moves back: the last state (st when rounds
// is empty) must be at or past the store's head, so that the node never closes a round
// it closed before again, which would sign a second vote or shard for it. ErrConflict
// otherwise, and nothing is written.
func (s *Store) JumpTo(m *checkpoint.Manifest, chunks [][]byte, st *incentives.State, rounds ...Round) error {
	return s.startAt(m, chunks, st, true, rounds)
}

func (s *Store) startAt(m *checkpoint.Manifest, chunks [][]byte, st *incentives.State, jump bool, rounds []Round) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	last := st
	if len(rounds) > 0 {
		last = rounds[len(rounds)-1].State
	}
	switch {
	case s.state == nil:
		return ErrNotInitialised
	case !jump && s.state.Round != 0:
		return fmt.Errorf("%w: starting at the checkpoint of round %d on a store at round %d", ErrConflict, m.Round, s.state.Round)
	case jump && last.Round < s.state.Round:
		return fmt.Errorf("%w: a jump to round %d on a store at round %d would close rounds again", ErrConflict, last.Round, s.state.Round)
	case m == nil && st.Round != 0:
		return fmt.Errorf("%w: a lineage without a checkpoint starts at round 0, not %d", ErrConflict, st.Round)
	case m != nil && (st.Round != m.Round || !bytes.Equal(st.Head, m.Root[:])):
		return fmt.Errorf("%w: the ledger given is not the checkpoint's of round %d", ErrConflict, m.Round)
	}
	if err := checkChain(st, rounds); err != nil {
		return err
	}
	put := func(*bolt.Tx) error { return nil }
	s.files.Lock()
	defer s.files.Unlock()
	defer func() { _ = s.sweepFiles() }()
	if m != nil {
		var err error
		if put, err = s.stageCheckpoint(m, chunks, nil, 1); err != nil {
			return err
		}
	}
	head := s.state.Round
	err := s.db.Update(func(tx *bolt.Tx) error {
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
		for _, r := range rounds {
			if err := writeRound(tx, r); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketMeta).Put(keyState, last.Marshal())
	})
	if err != nil {
		return fmt.Errorf("starting at round %d: %w", st.Round, err)
	}
	s.state = last
	return nil
}
