package store

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// TestLocalKeptBesideTheStore: the local state blob is read back with its round after a
// reopen and replaced by the next; a file too short for its round is ErrCorrupt; a blob an
// older build kept in the store is read while no file is there, and dropped by the next.
func TestLocalKeptBesideTheStore(t *testing.T) {
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
	if err := os.WriteFile(path+LocalSuffix, []byte{1, 2}, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := s.Local(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a 2-byte file: %v", err)
	}
	os.Remove(path + LocalSuffix)
	old := append(roundKey(5), "five"...)
	s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketLocal).Put(keyLocal, old) })
	if r, blob, ok, err := s.Local(); r != 5 || string(blob) != "five" || !ok || err != nil {
		t.Fatalf("kept in the store: got %d %q %v %v", r, blob, ok, err)
	}
	if err := s.PutLocal(8, []byte("eight")); err != nil {
		t.Fatal(err)
	}
	s.db.View(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketLocal).Get(keyLocal) != nil {
			t.Error("the blob kept in the store is still there")
		}
		return nil
	})
}

// TestLocalStateLeavesTheStoreFileAlone: saving the local state again and again (tens of
// MB on the default task) neither grows the store's file nor leaves it holding the state:
// bbolt never shrinks its file, and a value replaced in it stays as free pages as large.
func TestLocalStateLeavesTheStoreFileAlone(t *testing.T) {
	s, path := openTestStore(t)
	defer s.Close()
	before := fileSize(t, path)
	blob := bytes.Repeat([]byte{7}, 8<<20)
	for r := range uint64(3) {
		blob[0] = byte(r)
		if err := s.PutLocal(r, blob); err != nil {
			t.Fatal(err)
		}
	}
	if grew := fileSize(t, path) - before; grew > 1<<20 {
		t.Errorf("the store's file grew by %d bytes for a local state of %d", grew, len(blob))
	}
	if r, got, ok, err := s.Local(); r != 2 || !bytes.Equal(got, blob) || !ok || err != nil {
		t.Fatalf("got round %d, %d bytes, %v, %v", r, len(got), ok, err)
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestLocalOfAnEarlierStoreNotTaken: a local state file left beside a store file that was
// removed (a home started afresh) is not the new store's: Init of the new store drops it.
func TestLocalOfAnEarlierStoreNotTaken(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	if err := os.WriteFile(path+LocalSuffix, append(roundKey(9), "stale"...), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Init(testGenesis(t)); err != nil {
		t.Fatal(err)
	}
	if r, blob, ok, err := s.Local(); ok || err != nil {
		t.Fatalf("a new store has the local state of round %d %q (%v)", r, blob, err)
	}
}

// A local state written a piece at a time replaces the kept one only at Commit: an
// aborted one, or one that writes past MaxLocalBytes, leaves the kept blob and no
// temporary file.
func TestCreateLocalReplacesOnlyAtCommit(t *testing.T) {
	s, path := openTestStore(t)
	if err := s.PutLocal(3, []byte("three")); err != nil {
		t.Fatal(err)
	}
	lf, err := s.CreateLocal(4)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lf.Write([]byte("fo")); err != nil {
		t.Fatal(err)
	}
	if r, blob, _, _ := s.Local(); r != 3 || string(blob) != "three" {
		t.Fatalf("before the commit: round %d %q", r, blob)
	}
	lf.Abort()
	lf, err = s.CreateLocal(5)
	if err != nil {
		t.Fatal(err)
	}
	lf.max = 4 // MaxLocalBytes, scaled down
	if _, err := lf.Write([]byte("fi")); err != nil {
		t.Fatal(err)
	}
	if _, err := lf.Write([]byte("ve!")); err == nil {
		t.Fatal("a blob past MaxLocalBytes was taken")
	}
	if err := lf.Commit(); err == nil {
		t.Fatal("a blob past MaxLocalBytes was committed")
	}
	if r, blob, _, _ := s.Local(); r != 3 || string(blob) != "three" {
		t.Fatalf("after an abort and a refused commit: round %d %q", r, blob)
	}
	lf, err = s.CreateLocal(6)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"si", "x"} {
		if _, err := lf.Write([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	if err := lf.Commit(); err != nil {
		t.Fatal(err)
	}
	if r, blob, _, _ := s.Local(); r != 6 || string(blob) != "six" {
		t.Fatalf("after the commit: round %d %q", r, blob)
	}
	left, _ := filepath.Glob(path + LocalSuffix + ".tmp*")
	if len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
	// A kill while a local state is written leaves its temporary file: Open removes it.
	if _, err := s.CreateLocal(7); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if left, _ := filepath.Glob(path + LocalSuffix + ".tmp*"); len(left) != 0 {
		t.Fatalf("temporary files left after a reopen: %v", left)
	}
	if r, blob, _, _ := s.Local(); r != 6 || string(blob) != "six" {
		t.Fatalf("after the reopen: round %d %q", r, blob)
	}
}
