package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// MaxLocalBytes bounds the node's local state blob.
const MaxLocalBytes = 1 << 30

var (
	bucketLocal = []byte("local") // where builds before the local file kept the blob
	keyLocal    = []byte("state")
)

// LocalSuffix names the file beside the store's that holds the node's local state: the
// store's path with this suffix.
const LocalSuffix = ".local"

// PutLocal keeps the node's local state blob (opaque here), taken when round was the first
// open round, replacing the one before: the round (8 bytes, big-endian) and the blob in
// the file beside the store's (LocalSuffix), written to a temporary file, synced and
// renamed over it, so that a kill leaves the old blob or the new one. It is not in the
// bbolt file: a value of tens of MB would be copied into bbolt's page buffers at each
// commit, and would grow the file by twice its size, which bbolt never gives back. The
// store's file lock covers it: only the process holding the store writes it.
func (s *Store) PutLocal(round uint64, blob []byte) error {
	if len(blob) > MaxLocalBytes {
		return fmt.Errorf("local state of %d bytes (at most %d)", len(blob), MaxLocalBytes)
	}
	if err := writeSynced(s.path+LocalSuffix, roundKey(round), blob); err != nil {
		return fmt.Errorf("saving the local state: %w", err)
	}
	return s.dropOldLocal()
}

// Local returns the local state blob PutLocal kept and its round; ok is false when none
// was kept. A blob too short to hold a round, or over MaxLocalBytes, is ErrCorrupt. A
// store written by an older build may keep it in its "local" bucket instead.
func (s *Store) Local() (round uint64, blob []byte, ok bool, err error) {
	v, err := readCapped(s.path+LocalSuffix, 8+MaxLocalBytes)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return s.oldLocal()
	case err != nil:
		return 0, nil, false, fmt.Errorf("%w: reading the local state: %v", ErrCorrupt, err)
	case len(v) < 8:
		return 0, nil, false, fmt.Errorf("%w: local state of %d bytes", ErrCorrupt, len(v))
	}
	return binary.BigEndian.Uint64(v), v[8:], true, nil
}

// oldLocal is the blob an older build kept in the store's "local" bucket.
func (s *Store) oldLocal() (round uint64, blob []byte, ok bool, err error) {
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

// dropOldLocal drops the blob an older build kept in the store, once the file holds one.
func (s *Store) dropOldLocal() error {
	var old bool
	_ = s.db.View(func(tx *bolt.Tx) error { old = tx.Bucket(bucketLocal).Get(keyLocal) != nil; return nil })
	if !old {
		return nil
	}
	return s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketLocal).Delete(keyLocal) })
}

// dropLocalFile removes the local state file beside the store at path, if any.
func dropLocalFile(path string) error {
	if err := os.Remove(path + LocalSuffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("dropping the local state of an earlier store: %w", err)
	}
	return nil
}

// writeSynced replaces the file at path by the parts, one after another, through a synced
// temporary file renamed over it, and syncs the directory.
func writeSynced(path string, parts ...[]byte) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	for _, p := range parts {
		if _, err = f.Write(p); err != nil {
			return err
		}
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
