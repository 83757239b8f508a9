package store

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/lowband/lowband/node/checkpoint"
)

func countFiles(t *testing.T, dir string) int {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

// Files no kept checkpoint names (a kill between writing a checkpoint's files and the
// transaction that keeps it, temporary files of a kill during the write) are removed
// when the store is opened; the kept checkpoints' files stay and load.
func TestOpenRemovesCheckpointFilesNoCheckpointNames(t *testing.T) {
	s, path := openCkptStore(t)
	m := putCkpt(t, s, testCheckpoint(t, 7, 0), []byte("x"), 3)
	s.Close()
	dir := path + CheckpointsSuffix
	orphans := []string{
		filepath.Join(dir, "ab"+string(bytes.Repeat([]byte("0"), 62))+ckptExt),
		filepath.Join(dir, "ab"+string(bytes.Repeat([]byte("0"), 62))+localExt),
		filepath.Join(dir, "deadbeef.ckpt.tmp123"),
	}
	for _, o := range orphans {
		if err := os.WriteFile(o, []byte("left by a kill"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	other := filepath.Join(dir, "README")
	if err := os.WriteFile(other, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, o := range orphans {
		if _, err := os.Stat(o); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: %v, want it removed", filepath.Base(o), err)
		}
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("a file not of the store's naming was removed: %v", err)
	}
	c, local, err := s.LoadCheckpoint(7, ckptLimits())
	if err != nil || c.Root() != m.Root || string(local) != "x" {
		t.Fatalf("the kept checkpoint after reopening: %v", err)
	}
	for i, h := range m.Chunks {
		if got := s.Chunk(h); got == nil || len(got) != m.ChunkSizeOf(i) {
			t.Fatalf("chunk %d not served after reopening", i)
		}
	}
}

// A checkpoint whose file was cut short, or whose local state file is gone, is ErrCorrupt
// when loaded, and no chunk past the file's end is served.
func TestDamagedCheckpointFilesAreCorrupt(t *testing.T) {
	s, path := openCkptStore(t)
	m := putCkpt(t, s, testCheckpoint(t, 7, 0), []byte("x"), 3)
	name := filepath.Join(path+CheckpointsSuffix, hexID(m.ID()))
	if err := os.Truncate(name+ckptExt, int64(m.Size)-1); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.LoadCheckpoint(7, ckptLimits()); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a short checkpoint file: %v, want ErrCorrupt", err)
	}
	if s.Chunk(m.Chunks[len(m.Chunks)-1]) != nil {
		t.Fatal("a chunk past the file's end was served")
	}
	info, err := s.CheckpointAt(7)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(s.localPath(info)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CheckpointLocal(7); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a missing local state file: %v, want ErrCorrupt", err)
	}
}

// A store written by a build that kept checkpoints in bbolt still loads and serves them,
// and a checkpoint put after drops them and their chunks once they leave the kept ones.
func TestCheckpointsKeptInBoltStillLoad(t *testing.T) {
	s, _ := openCkptStore(t)
	c := testCheckpoint(t, 5, 0)
	m, chunks := checkpoint.Split(c, checkpoint.MinChunkSize)
	info := CheckpointInfo{Round: m.Round, ID: m.ID(), Root: m.Root, Size: m.Size, Manifest: m.Marshal(), Chunks: m.Chunks}
	enc, err := eventEnc.Marshal(&info)
	if err != nil {
		t.Fatal(err)
	}
	err = s.db.Update(func(tx *bolt.Tx) error { // as builds before the checkpoint files wrote it
		key := roundKey(m.Round)
		for _, p := range []struct{ bucket, k, v []byte }{
			{bucketCheckpoints, key, enc}, {bucketCkptLocal, key, append([]byte{localFormat}, "old"...)},
			{bucketCkptIDs, info.ID[:], key}, {bucketCkptRoots, info.Root[:], key},
		} {
			if err := tx.Bucket(p.bucket).Put(p.k, p.v); err != nil {
				return err
			}
		}
		for i, ch := range chunks {
			if err := tx.Bucket(bucketCkptChunks).Put(m.Chunks[i][:], ch); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got, local, err := s.LoadCheckpoint(5, ckptLimits())
	if err != nil || got.Root() != m.Root || string(local) != "old" {
		t.Fatalf("an old checkpoint: %v", err)
	}
	if !bytes.Equal(s.Chunk(m.Chunks[0]), chunks[0]) {
		t.Fatal("an old checkpoint's chunk is not served")
	}
	putCkpt(t, s, testCheckpoint(t, 6, 0), nil, 1)
	var left int
	_ = s.db.View(func(tx *bolt.Tx) error { left = tx.Bucket(bucketCkptChunks).Stats().KeyN; return nil })
	if left != 0 {
		t.Fatalf("%d chunks of the dropped old checkpoint left in bbolt", left)
	}
	if list, _ := s.Checkpoints(); len(list) != 1 || list[0].Round != 6 || !list[0].Files {
		t.Fatalf("kept after the put: %+v", list)
	}
}

// A reorg drops the checkpoints after its first round, and their files with them.
func TestDropCheckpointsAfterRemovesTheirFiles(t *testing.T) {
	s, path := openCkptStore(t)
	var ms []*checkpoint.Manifest
	for r := uint64(1); r <= 3; r++ {
		ms = append(ms, putCkpt(t, s, testCheckpoint(t, r, 0), nil, 10))
	}
	if err := s.DropCheckpointsAfter(1); err != nil {
		t.Fatal(err)
	}
	dir := path + CheckpointsSuffix
	es, _ := os.ReadDir(dir)
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	info, err := s.CheckpointAt(1)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{hexID(ms[0].ID()) + ckptExt, filepath.Base(s.localPath(info))}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("files %v, want %v", names, want)
	}
	if s.Chunk(ms[2].Chunks[0]) != nil {
		t.Fatal("a dropped checkpoint's chunk is served")
	}
}

// Storing a kept checkpoint again with another local state leaves the kept local state as
// it was when the transaction does not commit (here: the bbolt file is closed).
func TestCheckpointStoredAgainKeepsItsLocalStateUntilCommitted(t *testing.T) {
	s, path := openCkptStore(t)
	c := testCheckpoint(t, 4, 0)
	if _, err := s.WriteCheckpoint(c, []byte("old"), 3); err != nil {
		t.Fatal(err)
	}
	s.db.Close()
	if _, err := s.WriteCheckpoint(c, []byte("new"), 3); err == nil {
		t.Fatal("a checkpoint was stored in a closed bbolt file")
	}
	s, err := Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if local, err := s.CheckpointLocal(4); err != nil || string(local) != "old" {
		t.Fatalf("the kept local state after a failed store: %q, %v", local, err)
	}
}
