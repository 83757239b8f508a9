package node

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"reflect"
	"runtime"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/p2p/p2ptest"
	"github.com/lowband/lowband/training"
	"github.com/lowband/lowband/training/compress"
	"github.com/lowband/lowband/training/round"
)

// testLocal is a local state of a model of 12 values.
func testLocal() *localState {
	return &localState{
		Round: 4,
		Machine: round.LocalState{
			Codec: compress.EncoderState{Tensors: []compress.TensorState{{Name: "w", Shape: []int{3, 4}, Residual: make([]float64, 12), LowRank: true, Rank: 1, Q: []float64{1, -0.5, 0.25, 2}, Rand: []byte("pcg state")}}},
			Own:   make([]float64, 12), OwnRound: 3, Share: 0.5,
		},
		Optimizer: training.AdamWState{T: 2, M: [][]float64{make([]float64, 12)}, V: [][]float64{make([]float64, 12)}},
		Steps:     20, Drawn: 640,
	}
}

// TestLocalStateRoundTrips: a local state decodes to what was encoded, and the decoder
// refuses what is larger than the model allows, another version, trailing bytes and
// unknown fields with ErrLocalState.
func TestLocalStateRoundTrips(t *testing.T) {
	ls := testLocal()
	data, err := ls.marshal()
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeLocal(data, 12)
	if err != nil || got.Steps != 20 || got.Machine.Codec.Tensors[0].Q[1] != -0.5 || got.Version != localVersion {
		t.Fatalf("decoded %+v, %v", got, err)
	}
	h, _ := ls.header()
	h.Version = localVersion + 1
	other, _ := localEnc.Marshal(&h)
	lying := bytes.Clone(data)
	lying = append(lying[:len(lying)-8:len(lying)-8], 0) // a value cut short
	for name, bad := range map[string][]byte{
		"too large":      make([]byte, maxLocalBytes(12)+1),
		"other version":  other,
		"trailing bytes": append(bytes.Clone(data), 0),
		"short values":   lying,
		"no values":      data[:len(data)-8*52],
		"unknown field":  append([]byte{0xa1, 0x18, 0x63}, data...),
		"empty":          nil,
	} {
		if _, err := decodeLocal(bad, 12); !errors.Is(err, ErrLocalState) {
			t.Errorf("%s: %v, want ErrLocalState", name, err)
		}
	}
}

// FuzzDecodeLocal: whatever bytes the disk holds, decoding a local state returns a state
// or ErrLocalState, never panics, and what it returns encodes back to the same bytes.
func FuzzDecodeLocal(f *testing.F) {
	data, _ := testLocal().marshal()
	f.Add(data)
	empty, _ := (&localState{}).marshal()
	f.Add(empty)
	f.Fuzz(func(t *testing.T, b []byte) {
		ls, err := decodeLocal(b, 64)
		if err != nil {
			if !errors.Is(err, ErrLocalState) {
				t.Fatalf("error not ErrLocalState: %v", err)
			}
			return
		}
		again, err := ls.marshal()
		if err != nil || string(again) != string(b) {
			t.Fatalf("decoded state encodes to other bytes (%v)", err)
		}
	})
}

// bigLocal is a local state of a model of n values (one low-rank tensor of n/64 × 64, and
// its moments), every value random, as training leaves them.
func bigLocal(n int) *localState {
	rng := rand.New(rand.NewPCG(1, 2))
	vec := func(k int) []float64 {
		v := make([]float64, k)
		for i := range v {
			v[i] = rng.NormFloat64()
		}
		return v
	}
	return &localState{
		Round: 9,
		Machine: round.LocalState{
			Codec: compress.EncoderState{Tensors: []compress.TensorState{{
				Name: "w", Shape: []int{n / 64, 64}, Residual: vec(n), LowRank: true, Rank: 4, LastRank: 4,
				Q: vec(64 * 4), Gains: vec(4), Captured: 0.5, Rand: []byte("pcg state"),
			}}},
			Own: vec(n), OwnRound: 8, Share: 0.25,
		},
		Optimizer: training.AdamWState{T: 7, M: [][]float64{vec(n)}, V: [][]float64{vec(n)}},
		Steps:     70, Drawn: 2240,
	}
}

// TestLocalStateEncodingIsItsValuesOnce: the local state of a model of n values encodes in
// 8 bytes a value and little more, and encoding it allocates about that once (no growing
// buffer, no second copy): at a save the node holds the state and its encoding, no more.
func TestLocalStateEncodingIsItsValuesOnce(t *testing.T) {
	const n = 1 << 16
	ls := bigLocal(n)
	values := 4*n + 64*4 + 4
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	data, err := ls.marshal()
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > 8*values+1024 {
		t.Errorf("encoding of %d bytes for %d values: want at most 8 bytes a value and 1 KiB", len(data), values)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(len(data))+128<<10 {
		t.Errorf("encoding %d bytes allocated %d bytes: want at most its size and 128 KiB", len(data), alloc)
	}
	sink := sha256.New() // what a save streams to its file: the same bytes, with no copy of their size
	runtime.GC()
	runtime.ReadMemStats(&before)
	written, err := ls.writeTo(func(int) io.Writer { return sink })
	runtime.ReadMemStats(&after)
	if want := sha256.Sum256(data); err != nil || !bytes.Equal(sink.Sum(nil), want[:]) || written != int64(len(data)) {
		t.Fatalf("writeTo wrote %d bytes (%v), not marshal's %d", written, err, len(data))
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 128<<10 {
		t.Errorf("writing %d bytes allocated %d bytes", len(data), alloc)
	}
	got, err := decodeLocal(data, n)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Machine, ls.Machine) || !reflect.DeepEqual(got.Optimizer, ls.Optimizer) ||
		got.Round != ls.Round || got.Steps != ls.Steps || got.Drawn != ls.Drawn {
		t.Error("the decoded local state is not the one encoded")
	}
}

// TestWriteLocalInPlaceIsTheCopysEncoding: the loop's save, which reads the optimizer's
// float32 moments and the machine's state in place, writes the bytes the copied local
// state encodes to, and they decode to the trainer's state.
func TestWriteLocalInPlaceIsTheCopysEncoding(t *testing.T) {
	key := p2ptest.Key()
	self, _ := peer.IDFromPrivateKey(key)
	s := syntheticSpec(t, map[string]uint64{self.String(): 100})
	h := newLoopHarness(t, s, key, newFakeClock(), nil)
	tr := h.l.train
	if err := training.Adopt(tr.inner.Model.Params(), training.Snapshot(tr.inner.Model.Params())); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.inner.Run(tr.batch, 3); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := h.l.writeLocal(5, &buf); err != nil {
		t.Fatal(err)
	}
	in := buf.Bytes()
	want, err := h.l.takeLocal(5).marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(in, want) {
		t.Fatalf("in place: %d bytes, copied: %d bytes, not the same", len(in), len(want))
	}
	n := 0
	for _, p := range tr.inner.Model.Params() {
		n += len(p.Data)
	}
	ls, err := decodeLocal(in, n)
	if err != nil || ls.Optimizer.T != 3 || ls.Steps != 3 || len(ls.Optimizer.M) != len(tr.inner.Model.Params()) {
		t.Fatalf("decoded %+v, %v", ls, err)
	}
	m, _ := tr.inner.Opt.(*training.AdamW).Moments()
	if ls.Optimizer.M[0][1] != float64(m[0][1]) || m[0][1] == 0 {
		t.Fatalf("first moment %v, the optimizer holds %v", ls.Optimizer.M[0][1], m[0][1])
	}
}
