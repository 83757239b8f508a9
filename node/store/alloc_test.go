package store

import (
	"runtime"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/lowband/lowband/node/checkpoint"
)

// bigCheckpoint is a checkpoint of round r whose θ holds 2^21 values (16 MB encoded).
func bigCheckpoint(t *testing.T, r uint64) *checkpoint.Checkpoint {
	t.Helper()
	c := testCheckpoint(t, r, 0)
	data := make([]float64, 1<<21)
	for i := range data {
		data[i] = float64(i)/7 + float64(r)
	}
	c.Model = roundState(r, data)
	c.Model.Params[0].Shape = []int{len(data)}
	root := c.Root()
	c.Ledger.Head = root[:]
	return c
}

// TestSuccessiveCheckpointsAreNotCopied: storing checkpoints of 16 MB one after another,
// keeping 3, allocates a small part of each one's size, and the bbolt file does not grow
// with them. Kept in bbolt, each put after the first allocated about 9 times a checkpoint
// of 12 MB (a new chunk lands in a B-tree leaf beside older ones, and the whole leaf is
// copied into page buffers and written again), and every older chunk so rewritten was read
// through bbolt's memory map, so the node's resident memory grew with every checkpoint.
func TestSuccessiveCheckpointsAreNotCopied(t *testing.T) {
	s, path := openCkptStore(t)
	if err := s.Init(testGenesis(t)); err != nil {
		t.Fatal(err)
	}
	local := make([]byte, 8<<20)
	for r := uint64(1); r <= 5; r++ {
		m, chunks := checkpoint.Split(bigCheckpoint(t, r), 0)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		if err := s.PutCheckpoint(m, chunks, local, 3); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > m.Size/8 {
			t.Errorf("storing checkpoint %d of %d bytes allocated %d", r, m.Size, alloc)
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
