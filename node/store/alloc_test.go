package store

import (
	"runtime"
	"testing"

	"github.com/lowband/lowband/node/checkpoint"
)

// TestPutCheckpointCopiesItOnce: storing a checkpoint of 16 MB in a new store allocates
// about its size once (bbolt's page buffers), not a second copy when the file outgrows
// its memory map (bbolt then copies every value of the transaction to the heap).
func TestPutCheckpointCopiesItOnce(t *testing.T) {
	s, _ := openCkptStore(t)
	if err := s.Init(testGenesis(t)); err != nil {
		t.Fatal(err)
	}
	c := testCheckpoint(t, 1, 0)
	data := make([]float64, 1<<21)
	for i := range data {
		data[i] = float64(i) / 7
	}
	c.Model = roundState(1, data)
	c.Model.Params[0].Shape = []int{len(data)}
	root := c.Root()
	c.Ledger.Head = root[:]
	m, chunks := checkpoint.Split(c, 0)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if err := s.PutCheckpoint(m, chunks, nil, 1); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > m.Size*3/2 {
		t.Errorf("storing a checkpoint of %d bytes allocated %d", m.Size, alloc)
	}
}
