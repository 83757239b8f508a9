package checkpoint

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"testing"

	"github.com/lowband/lowband/training"
	"github.com/lowband/lowband/training/round"
)

// WriteSplit writes the bytes Encode gives and returns the manifest Split gives, for
// chunk sizes that divide the encoding into whole chunks or leave a short last one, for a
// checkpoint without tensors, momentum or ledger too.
func TestWriteSplitIsSplit(t *testing.T) {
	empty := &Checkpoint{Network: "n", Run: "r", Round: 1, Model: round.State{Params: []training.Tensor{}}}
	for _, c := range []*Checkpoint{sizedCheckpoint(t, 1<<16), sizedCheckpoint(t, 8), {Network: "n", Run: "r", Round: 1}, empty} {
		w := c.wire()
		lib, err := encMode.Marshal(&w)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(c.Encode(), lib) {
			t.Fatalf("a checkpoint of %d tensors: Encode is not the library's encoding", len(c.Model.Params))
		}
		for _, size := range []int{0, MinChunkSize, MinChunkSize + 1} {
			want, chunks := Split(c, size)
			var buf bytes.Buffer
			got, err := WriteSplit(c, size, &buf)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf.Bytes(), bytes.Join(chunks, nil)) {
				t.Fatalf("chunk size %d: the bytes written are not the encoding", size)
			}
			if !bytes.Equal(got.Marshal(), want.Marshal()) {
				t.Fatalf("chunk size %d: manifest %+v, Split gives %+v", size, got, want)
			}
		}
	}
}

// WriteTo holds no copy of the values: writing a checkpoint of 8 MB allocates less than
// 1% of it.
func TestWriteToCopiesNothingOfItsSize(t *testing.T) {
	c := sizedCheckpoint(t, 1<<20)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	n, err := c.WriteTo(io.Discard)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(n)/100 {
		t.Errorf("writing %d bytes allocated %d", n, alloc)
	}
}

// failAfter takes n bytes, then fails every write.
type failAfter struct{ n int }

var errFull = errors.New("disk full")

func (f *failAfter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		k := f.n
		f.n = 0
		return k, errFull
	}
	f.n -= len(p)
	return len(p), nil
}

// A writer that fails stops the writing: its error is returned, with the bytes it took.
func TestWriteSplitReturnsTheWritersError(t *testing.T) {
	c := sizedCheckpoint(t, 1<<16)
	for _, n := range []int{0, 100, 70000} {
		m, err := WriteSplit(c, 0, &failAfter{n: n})
		if !errors.Is(err, errFull) || m != nil {
			t.Fatalf("failing after %d bytes: manifest %v, %v", n, m, err)
		}
	}
}
