package store

import (
	"bytes"
	"runtime"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/lowband/lowband/node/checkpoint"
)

// bigCheckpoint is a checkpoint of round r whose θ holds 2^19 values (4 MB encoded).
func bigCheckpoint(t *testing.T, r uint64) *checkpoint.Checkpoint {
	t.Helper()
	c := testCheckpoint(t, r, 0)
	data := make([]float64, 1<<19)
	for i := range data {
		data[i] = float64(i)/7 + float64(r)
	}
	c.Model = roundState(r, data)
	c.Model.Params[0].Shape = []int{len(data)}
	root := c.Root()
	c.Ledger.Head = root[:]
	return c
}

// TestSuccessiveCheckpointsAreNotCopied: storing checkpoints of 4 MB one after another,
// keeping 3, allocates buffers of a fixed size, none of a checkpoint's, and the bbolt file
// does not grow with them. Kept in bbolt, each put after the first allocated about 9 times a checkpoint
// of 12 MB (a new chunk lands in a B-tree leaf beside older ones, and the whole leaf is
// copied into page buffers and written again), and every older chunk so rewritten was read
// through bbolt's memory map, so the node's resident memory grew with every checkpoint.
func TestSuccessiveCheckpointsAreNotCopied(t *testing.T) {
	s, path := openCkptStore(t)
	if err := s.Init(testGenesis(t)); err != nil {
		t.Fatal(err)
	}
	local := make([]byte, 2<<20)
	for r := uint64(1); r <= 5; r++ {
		m, chunks := checkpoint.Split(bigCheckpoint(t, r), 0)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		if err := s.PutCheckpoint(m, chunks, local, 3); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
			t.Errorf("storing checkpoint %d of %d bytes allocated %d (want at most 1 MiB: buffers, not its size)", r, m.Size, alloc)
		}
	}
	var used int64
	_ = s.db.View(func(tx *bolt.Tx) error { used = tx.Size(); return nil })
	if used > 1<<20 {
		t.Errorf("the bbolt file's pages reach %d bytes after 5 checkpoints", used)
	}
	if n := countFiles(t, path+CheckpointsSuffix); n != 6 {
		t.Errorf("%d files in the checkpoints directory, want 6 (3 checkpoints)", n)
	}
}

// WriteCheckpoint keeps what PutCheckpoint keeps of the same checkpoint (the same
// manifest, bytes and local state), encoding it into its file with buffers of a fixed size
// allocated, none of its size.
func TestWriteCheckpointKeepsWhatPutCheckpointKeeps(t *testing.T) {
	s, _ := openCkptStore(t)
	c := bigCheckpoint(t, 3)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	m, err := s.WriteCheckpoint(c, []byte("mine"), 3)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
		t.Errorf("writing a checkpoint of %d bytes allocated %d (want at most 1 MiB: buffers, not its size)", m.Size, alloc)
	}
	want, chunks := checkpoint.Split(c, 0)
	if m.ID() != want.ID() {
		t.Fatal("WriteCheckpoint's manifest is not Split's")
	}
	got, local, err := s.LoadCheckpoint(3, checkpoint.Limits{Network: ckptNetwork, Run: ckptRun, Like: c.Model.Params})
	if err != nil || got.Root() != m.Root || string(local) != "mine" {
		t.Fatalf("loading it back: %v", err)
	}
	for i, h := range m.Chunks {
		if !bytes.Equal(s.Chunk(h), chunks[i]) {
			t.Fatalf("chunk %d is not Split's", i)
		}
	}
}
