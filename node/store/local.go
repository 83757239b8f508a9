package store

import (
	"encoding/binary"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// MaxLocalBytes bounds the node's local state blob kept in its own key.
const MaxLocalBytes = 1 << 30

var (
	bucketLocal = []byte("local")
	keyLocal    = []byte("state")
)

// PutLocal keeps the node's local state blob (opaque here), taken when round was the first
// open round, in its own key, replacing the one before, in one synced transaction. The
// node keeps it there while it has no checkpoint to keep it with.
func (s *Store) PutLocal(round uint64, blob []byte) error {
	if len(blob) > MaxLocalBytes {
		return fmt.Errorf("local state of %d bytes (at most %d)", len(blob), MaxLocalBytes)
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketLocal).Put(keyLocal, append(roundKey(round), blob...))
	})
}

// Local returns the local state blob PutLocal kept and its round; ok is false when none
// was kept. A value too short to hold a round, or over MaxLocalBytes, is ErrCorrupt.
func (s *Store) Local() (round uint64, blob []byte, ok bool, err error) {
	err = s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketLocal).Get(keyLocal)
		switch {
		case v == nil:
			return nil
		case len(v) < 8 || len(v) > 8+MaxLocalBytes:
			return fmt.Errorf("%w: local state of %d bytes", ErrCorrupt, len(v))
		}
		round, blob, ok = binary.BigEndian.Uint64(v), slices.Clone(v[8:]), true
		return nil
	})
	return round, blob, ok, err
}
