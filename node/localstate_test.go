package node

import (
	"errors"
	"testing"

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
	v2 := *ls
	v2.Version = 2
	other, _ := localEnc.Marshal(&v2)
	for name, bad := range map[string][]byte{
		"too large":      make([]byte, maxLocalBytes(12)+1),
		"other version":  other,
		"trailing bytes": append(data, 0),
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
