package store

import (
	"errors"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// TestLocalKeptInItsOwnKey: the local state blob is read back with its round after a
// reopen, replaced by the next, and a stored value too short for its round is ErrCorrupt.
func TestLocalKeptInItsOwnKey(t *testing.T) {
	s, path := openTestStore(t)
	if _, _, ok, err := s.Local(); ok || err != nil {
		t.Fatalf("a new store has a local state: %v %v", ok, err)
	}
	if err := s.PutLocal(3, []byte("three")); err != nil {
		t.Fatal(err)
	}
	if err := s.PutLocal(7, []byte("seven")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err := Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if r, blob, ok, err := s.Local(); r != 7 || string(blob) != "seven" || !ok || err != nil {
		t.Fatalf("got %d %q %v %v", r, blob, ok, err)
	}
	s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketLocal).Put(keyLocal, []byte{1, 2}) })
	if _, _, _, err := s.Local(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a 2-byte value: %v", err)
	}
}
