package store

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
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
	lf, err := s.CreateLocal(round)
	if err != nil {
		return err
	}
	if _, err := lf.Write(blob); err != nil {
		lf.Abort()
		return err
	}
	return lf.Commit()
}

// LocalFile is a local state blob being written (CreateLocal): Write its bytes, then
// Commit or Abort.
type LocalFile struct {
	s   *Store
	f   *os.File
	bw  *bufio.Writer
	n   int
	max int // MaxLocalBytes
	err error
}

// CreateLocal starts replacing the local state blob by one taken when round was the first
// open round, as PutLocal does, for a caller that writes the blob a piece at a time from
// the state it holds instead of encoding it into memory first. The bytes go through a
// buffer to a temporary file beside the store's; nothing replaces the kept blob until
// Commit, which may be called on another goroutine (it syncs).
func (s *Store) CreateLocal(round uint64) (*LocalFile, error) {
	f, err := os.CreateTemp(filepath.Dir(s.path), filepath.Base(s.path+LocalSuffix)+".tmp*")
	if err != nil {
		return nil, fmt.Errorf("saving the local state: %w", err)
	}
	lf := &LocalFile{s: s, f: f, bw: bufio.NewWriterSize(f, 256<<10), max: MaxLocalBytes}
	if _, err := lf.bw.Write(roundKey(round)); err != nil {
		lf.Abort()
		return nil, fmt.Errorf("saving the local state: %w", err)
	}
	return lf, nil
}

// Write writes p, up to MaxLocalBytes in all.
func (lf *LocalFile) Write(p []byte) (int, error) {
	if lf.err != nil {
		return 0, lf.err
	}
	if lf.n+len(p) > lf.max {
		lf.err = fmt.Errorf("local state of more than %d bytes", lf.max)
		return 0, lf.err
	}
	n, err := lf.bw.Write(p)
	lf.n += n
	lf.err = err
	return n, err
}

// Commit syncs the blob written and renames it over the local state file, then drops the
// blob an older build kept in bbolt. On error the kept blob is as it was.
func (lf *LocalFile) Commit() error {
	err := lf.err
	if err == nil {
		err = lf.bw.Flush()
	}
	if err == nil {
		err = lf.f.Sync()
	}
	if cerr := lf.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = renameSynced(lf.f.Name(), lf.s.path+LocalSuffix)
	}
	if err != nil {
		os.Remove(lf.f.Name())
		return fmt.Errorf("saving the local state: %w", err)
	}
	return lf.s.dropOldLocal()
}

// Abort drops the blob written; the kept one stays.
func (lf *LocalFile) Abort() {
	lf.f.Close()
	os.Remove(lf.f.Name())
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
func writeSynced(path string, parts ...[]byte) error {
	tmp, err := writeTemp(filepath.Dir(path), filepath.Base(path), func(w io.Writer) error {
		for _, p := range parts {
			if _, err := w.Write(p); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return renameSynced(tmp, path)
}

// writeTemp writes a temporary file in dir, its name made of base and ".tmp", through a
// buffer, and syncs it; it returns its path. On error nothing is left.
func writeTemp(dir, base string, write func(io.Writer) error) (path string, err error) {
	f, err := os.CreateTemp(dir, base+".tmp*")
	if err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	bw := bufio.NewWriterSize(f, 256<<10)
	if err = write(bw); err != nil {
		return "", err
	}
	if err = bw.Flush(); err != nil {
		return "", err
	}
	if err = f.Sync(); err != nil {
		return "", err
	}
	if err = f.Close(); err != nil {
		return "", err
	}
	return f.Name(), nil
}

// renameSynced renames the synced file tmp to path and syncs the directory; on error tmp
// is removed.
func renameSynced(tmp, path string) error {
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
