package store

import (
	"bytes"
	"fmt"

	"github.com/fxamacker/cbor/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/lowband/lowband/incentives"
)

// Record returns the stored record of a round, or nil when there is none.
func (s *Store) Record(round uint64) (*incentives.Record, error) {
	var rec *incentives.Record
	err := s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketRecords).Get(roundKey(round))
		if v == nil {
			return nil
		}
		r, err := incentives.DecodeRecord(v)
		if err != nil {
			return fmt.Errorf("%w: record %d: %v", ErrCorrupt, round, err)
		}
		rec = r
		return nil
	})
	return rec, err
}

// Records calls fn with the encoding of every stored record from round from on, in round
// order. The bytes are valid only during the call.
func (s *Store) Records(from uint64, fn func(round uint64, data []byte) error) error {
	return s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketRecords).Cursor()
		for k, v := c.Seek(roundKey(from)); k != nil; k, v = c.Next() {
			if len(k) != 8 {
				return fmt.Errorf("%w: record key of %d bytes", ErrCorrupt, len(k))
			}
			if err := fn(bytesToRound(k), v); err != nil {
				return err
			}
		}
		return nil
	})
}

func bytesToRound(k []byte) uint64 {
	var r uint64
	for _, b := range k {
		r = r<<8 | uint64(b)
	}
	return r
}

// Evidence returns stored evidence by ID, or nil when there is none.
func (s *Store) Evidence(id incentives.ID) (*incentives.Evidence, error) {
	var e *incentives.Evidence
	err := s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketEvidence).Get(id[:])
		if v == nil {
			return nil
		}
		d, err := incentives.DecodeEvidence(v)
		if err != nil {
			return fmt.Errorf("%w: evidence %s: %v", ErrCorrupt, id, err)
		}
		e = d
		return nil
	})
	return e, err
}

// History returns every event of peer, in round order.
func (s *Store) History(peer string) ([]incentives.Event, error) {
	var out []incentives.Event
	prefix, err := historyPrefix(peer)
	if err != nil {
		return nil, nil // no event names such a peer
	}
	err = s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketHistory).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			var e incentives.Event
			if err := cbor.Unmarshal(v, &e); err != nil {
				return fmt.Errorf("%w: event %x: %v", ErrCorrupt, k, err)
			}
			out = append(out, e)
		}
		return nil
	})
	return out, err
}
