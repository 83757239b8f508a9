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
	if err := checkSigned(signed, rec); err != nil {
		return err
	}
	return s.commit(signed, rec, next, events, shards...)
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
