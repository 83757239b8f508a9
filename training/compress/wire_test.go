package compress

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"github.com/fxamacker/cbor/v2"
)

// sample returns a small real message: a low-rank matrix, a dense vector, a dense matrix.
func sample(t testing.TB) *Message {
	rng := newRand(10)
	e := mustEncoder(t, Config{RankMin: 2, RankMax: 4, MinLowRank: 64})
	return mustEncode(t, e, []Tensor{randTensor(rng, "w", 1, 20, 12), randTensor(rng, "b", 1, 11), randTensor(rng, "s", 1, 3, 5)})
}

func wireOf(m *Message) wireMessage {
	ps := make([]piece, len(m.pieces))
	for i, p := range m.pieces {
		p.Shape = append([]int(nil), p.Shape...)
		p.Codes, p.Scales = bytes.Clone(p.Codes), bytes.Clone(p.Scales)
		p.QCodes, p.QScales = bytes.Clone(p.QCodes), bytes.Clone(p.QScales)
		ps[i] = p
	}
	return wireMessage{Version: Version, Part: m.part, Parts: m.parts, Block: m.block, Pieces: ps}
}

func encodeWire(t testing.TB, w wireMessage) []byte {
	t.Helper()
	b, err := encMode.Marshal(&w)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDecodeShardRoundTrip(t *testing.T) {
	m := sample(t)
	data := mustBytes(t, m)
	got, err := DecodeShard(data, DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	a, b := mustDecode(t, m), mustDecode(t, got)
	for i := range a {
		for j := range a[i].Data {
			if a[i].Data[j] != b[i].Data[j] {
				t.Fatalf("%s[%d] differs after the wire", a[i].Name, j)
			}
		}
	}
}

func TestDecodeShardRejects(t *testing.T) {
	m := sample(t)
	good := mustBytes(t, m)
	mutate := func(f func(w *wireMessage)) []byte {
		w := wireOf(m)
		f(&w)
		return encodeWire(t, w)
	}
	type tc struct {
		name string
		data []byte
		lim  Limits
		want error
	}
	cases := []tc{
		{"empty", nil, DefaultLimits, ErrMalformed},
		{"truncated by one", good[:len(good)-1], DefaultLimits, ErrMalformed},
		{"truncated half", good[:len(good)/2], DefaultLimits, ErrMalformed},
		{"trailing byte", append(append([]byte(nil), good...), 0), DefaultLimits, ErrMalformed},
		{"oversized", good, Limits{MaxBytes: len(good) - 1, MaxTensors: 10, MaxElements: 1000}, ErrTooLarge},
		{"too many tensors", good, Limits{MaxBytes: 1 << 20, MaxTensors: 2, MaxElements: 1000}, ErrTooLarge},
		{"too many elements", good, Limits{MaxBytes: 1 << 20, MaxTensors: 10, MaxElements: 200}, ErrTooLarge},
		{"rank above limit", good, Limits{MaxRank: 1}, ErrMalformed},
		{"version 2", mutate(func(w *wireMessage) { w.Version = 2 }), DefaultLimits, ErrVersion},
		{"part out of range", mutate(func(w *wireMessage) { w.Part = 1 }), DefaultLimits, ErrMalformed},
		{"odd block", mutate(func(w *wireMessage) { w.Block = 63 }), DefaultLimits, ErrMalformed},
		{"no tensors", mutate(func(w *wireMessage) { w.Pieces = nil }), DefaultLimits, ErrTooLarge},
		{"empty name", mutate(func(w *wireMessage) { w.Pieces[1].Name = "" }), DefaultLimits, ErrMalformed},
		{"zero dimension", mutate(func(w *wireMessage) { w.Pieces[1].Shape = []int{0} }), DefaultLimits, ErrMalformed},
		{"negative dimension", mutate(func(w *wireMessage) { w.Pieces[2].Shape = []int{-3, -5} }), DefaultLimits, ErrMalformed},
		{"huge shape", mutate(func(w *wireMessage) { w.Pieces[1].Shape = []int{1 << 30, 1 << 30, 1 << 30} }), DefaultLimits, ErrTooLarge},
		{"shape vs codes", mutate(func(w *wireMessage) { w.Pieces[1].Shape = []int{12}; w.Pieces[1].Hi = 12 }), DefaultLimits, ErrMalformed},
		{"range past shape", mutate(func(w *wireMessage) { w.Pieces[1].Hi = 12 }), DefaultLimits, ErrMalformed},
		{"empty range", mutate(func(w *wireMessage) { w.Pieces[1].Lo = 11 }), DefaultLimits, ErrMalformed},
		{"short codes", mutate(func(w *wireMessage) { w.Pieces[1].Codes = w.Pieces[1].Codes[1:] }), DefaultLimits, ErrMalformed},
		{"missing scales", mutate(func(w *wireMessage) { w.Pieces[1].Scales = nil }), DefaultLimits, ErrMalformed},
		{"bad width", mutate(func(w *wireMessage) { w.Pieces[1].Bits = 16 }), DefaultLimits, ErrMalformed},
		{"rank > min dim", mutate(func(w *wireMessage) { w.Pieces[0].Rank = 13 }), DefaultLimits, ErrMalformed},
		{"low-rank 1-D", mutate(func(w *wireMessage) { w.Pieces[0].Shape = []int{240} }), DefaultLimits, ErrMalformed},
		{"short Q", mutate(func(w *wireMessage) { w.Pieces[0].QCodes = w.Pieces[0].QCodes[:3] }), DefaultLimits, ErrMalformed},
		{"dense with Q", mutate(func(w *wireMessage) { w.Pieces[1].QCodes = []byte{1} }), DefaultLimits, ErrMalformed},
		{"padding nibble", mutate(func(w *wireMessage) {
			w.Pieces[1].Bits, w.Pieces[1].Codes = bits4, make([]byte, 6)
			w.Pieces[1].Codes[5] = 0x10
		}), DefaultLimits, ErrNonCanonical},
		{"unknown field", func() []byte {
			b, _ := cbor.Marshal(map[int]any{1: Version, 2: 0, 3: 1, 4: 64, 5: []any{}, 6: 0})
			return b
		}(), DefaultLimits, ErrMalformed},
		{"not a map", []byte{0x83, 0x01, 0x02, 0x03}, DefaultLimits, ErrMalformed},
		{"non-shortest integer", nonShortest(good), DefaultLimits, ErrNonCanonical},
	}
	for _, c := range cases {
		_, err := DecodeShard(c.data, c.lim)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
}

// nonShortest re-encodes the version field (key 1, value 1) with a one-byte argument.
func nonShortest(good []byte) []byte {
	// good starts with a map header, then key 0x01 and value 0x01.
	if good[1] != 0x01 || good[2] != 0x01 {
		panic("unexpected encoding")
	}
	out := append([]byte{good[0], 0x01, 0x18, 0x01}, good[3:]...)
	return out
}

// Raw float64 pieces (Config.NoQuant) are for tests and analysis inside one process: a
// peer's values are codes times bfloat16 scales, never arbitrary 64-bit patterns.
func TestRawPiecesRefusedFromPeers(t *testing.T) {
	rng := newRand(11)
	e := mustEncoder(t, Config{RankMin: 2, RankMax: 2, MinLowRank: 64, NoQuant: true})
	m := mustEncode(t, e, []Tensor{randTensor(rng, "w", 1, 20, 12), randTensor(rng, "b", 1, 11)})
	for i, p := range m.pieces {
		one := &Message{part: 0, parts: 1, block: m.block, pieces: []piece{p}}
		data := mustBytes(t, one)
		if _, err := DecodeShard(data, DefaultLimits); !errors.Is(err, ErrMalformed) {
			t.Errorf("piece %d (rank %d, raw): DecodeShard gave %v, want ErrMalformed", i, p.Rank, err)
		}
		shapes := map[string][]int{p.Name: p.Shape}
		if err := CheckShard(data, shapes, math.Inf(1), DefaultLimits); !errors.Is(err, ErrUndecodable) {
			t.Errorf("piece %d (rank %d, raw): CheckShard gave %v, want ErrUndecodable", i, p.Rank, err)
		}
	}
}
