package store

import (
	"bytes"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/lowband/lowband/incentives"
)

// bucketSigned keeps the node's own records as it signed them: round -> SignedRecord bytes.
var bucketSigned = []byte("signed-records")

// CommitSigned is Commit keeping, in the same transaction, signed: the node's own signed
// record of rec as it published it, for an offline audit. signed must decode as a signed
// record (incentives.DecodeSignedRecord) whose record is exactly rec; ErrConflict
// otherwise, and nothing is written. The signature is not checked here: the audit checks it.
func (s *Store) CommitSigned(signed []byte, rec *incentives.Record, next *incentives.State, events []incentives.Event, shards ...Shard) error {
	if signed == nil {
		return fmt.Errorf("%w: no signed record of round %d", ErrConflict, rec.Round)
	}
	return s.CommitRound(Round{Record: rec, State: next, Events: events, Shards: shards, Signed: signed})
}

// CommitRound is Commit of r, keeping in the same transaction r.Signed when set (checked
// as CommitSigned checks it) and r.Vote when set: the signed record the node published
// for the round, its vote, which must decode as a signed record of r's round (ErrConflict
// otherwise). A vote stays when a Reorg replaces its round: the node voted once.
func (s *Store) CommitRound(r Round) error {
	if err := checkSigned(r.Signed, r.Record); err != nil {
		return err
	}
	if err := checkVote(r.Vote, r.Record.Round); err != nil {
		return err
	}
	return s.commit(r)
}

// checkSigned checks that signed, when not nil, is a signed record of exactly rec
// (ErrConflict otherwise).
func checkSigned(signed []byte, rec *incentives.Record) error {
	if signed == nil {
		return nil
	}
	_, inner, err := incentives.DecodeSignedRecord(signed)
	if err != nil {
		return fmt.Errorf("%w: signed record of round %d: %v", ErrConflict, rec.Round, err)
	}
	if !bytes.Equal(inner.Marshal(), rec.Marshal()) {
		return fmt.Errorf("%w: the signed record of round %d is not the record committed", ErrConflict, rec.Round)
	}
	return nil
}

// putSigned keeps the signed record of round r (none when signed is nil).
func putSigned(tx *bolt.Tx, r uint64, signed []byte) error {
	if signed == nil {
		return nil
	}
	return tx.Bucket(bucketSigned).Put(roundKey(r), signed)
}

// Signed is the node's own signed record of round r as CommitSigned kept it; nil when none is
// kept (a round committed without an identity, or closed again by a repair). The bytes
// are the caller's.
func (s *Store) Signed(r uint64) ([]byte, error) {
	var out []byte
	err := s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketSigned).Get(roundKey(r))
		if len(v) > incentives.MaxSignedRecordSize {
			return fmt.Errorf("%w: signed record of round %d: %d bytes", ErrCorrupt, r, len(v))
		}
		out = bytes.Clone(v)
		return nil
	})
	return out, err
}

// bucketVotes keeps the node's votes: round -> the signed record it published for it.
var bucketVotes = []byte("votes")

// checkVote checks that vote, when not nil, is a signed record of round r that is a vote.
func checkVote(vote []byte, r uint64) error {
	if vote == nil {
		return nil
	}
	sr, rec, err := incentives.DecodeSignedRecord(vote)
	if err != nil {
		return fmt.Errorf("%w: vote of round %d: %v", ErrConflict, r, err)
	}
	if !sr.IsVote() {
		return fmt.Errorf("%w: the vote kept with round %d is a committed record, not a vote", ErrConflict, r)
	}
	if rec.Round != r {
		return fmt.Errorf("%w: the vote kept with round %d is of round %d", ErrConflict, r, rec.Round)
	}
	return nil
}

// putVote keeps the vote of round r (none when vote is nil). A node votes once on a
// round: a vote other than the one kept for r is ErrConflict, so that no path that would
// close a round again (a restart, a resync, a jump) gets a second, different vote of the
// node committed and published.
func putVote(tx *bolt.Tx, r uint64, vote []byte) error {
	if vote == nil {
		return nil
	}
	b := tx.Bucket(bucketVotes)
	if kept := b.Get(roundKey(r)); kept != nil && !bytes.Equal(kept, vote) {
		return fmt.Errorf("%w: the node voted on round %d already, differently", ErrConflict, r)
	}
	return b.Put(roundKey(r), vote)
}

// Vote is the node's vote on round r as CommitRound kept it, through any Reorg of the
// round; nil when none is kept. The bytes are the caller's.
func (s *Store) Vote(r uint64) ([]byte, error) {
	var out []byte
	err := s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketVotes).Get(roundKey(r))
		if len(v) > incentives.MaxSignedRecordSize {
			return fmt.Errorf("%w: vote of round %d: %d bytes", ErrCorrupt, r, len(v))
		}
		out = bytes.Clone(v)
		return nil
	})
	return out, err
}
