package store

import (
	"bytes"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/lowband/lowband/incentives"
)

// bucketSigned keeps the node's own records as it signed them: round -> SignedRecord bytes.
var bucketSigned = []byte("signed-records")

// PutSigned keeps data, the node's own signed record of round r as it published it, next
// to the stored record of r, for an offline audit. data must decode as a signed record
// (incentives.DecodeSignedRecord) whose record is exactly the stored record of r;
// ErrConflict otherwise, and nothing is written. The signature is not checked here: the
// audit checks it.
func (s *Store) PutSigned(r uint64, data []byte) error {
	_, rec, err := incentives.DecodeSignedRecord(data)
	if err != nil {
		return fmt.Errorf("%w: signed record of round %d: %v", ErrConflict, r, err)
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		stored := tx.Bucket(bucketRecords).Get(roundKey(r))
		if rec.Round != r || !bytes.Equal(stored, rec.Marshal()) {
			return fmt.Errorf("%w: the signed record of round %d is not the stored record", ErrConflict, r)
		}
		return tx.Bucket(bucketSigned).Put(roundKey(r), data)
	})
}

// Signed is the node's own signed record of round r as PutSigned kept it; nil when none is
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
