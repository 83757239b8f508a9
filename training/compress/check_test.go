package compress

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"
)

func sampleShapes() map[string][]int {
	return map[string][]int{"w": {20, 12}, "b": {11}, "s": {3, 5}}
}

func TestCheckShard(t *testing.T) {
	m := sample(t)
	good := mustBytes(t, m)
	var ss float64
	for _, tt := range mustDecode(t, m) {
		ss += sumSquares(tt.Data)
	}
	n := math.Sqrt(ss)
	mutate := func(f func(w *wireMessage)) []byte {
		w := wireOf(m)
		f(&w)
		return encodeWire(t, w)
	}
	nanScale := func(p *piece, h uint16) { binary.LittleEndian.PutUint16(p.Scales, h) }
	wrong := sampleShapes()
	wrong["b"] = []int{11, 1}
	missing := sampleShapes()
	delete(missing, "s")
	cases := []struct {
		name    string
		data    []byte
		shapes  map[string][]int
		maxNorm float64
		want    error
	}{
		{"valid", good, sampleShapes(), n * (1 + 1e-9), nil},
		{"undecodable", good[:len(good)-3], sampleShapes(), n * 2, ErrUndecodable},
		{"oversized", append(make([]byte, HardMaxShardBytes), good...), sampleShapes(), n * 2, ErrUndecodable},
		{"wrong shape", good, wrong, n * 2, ErrShape},
		{"unknown tensor", good, missing, n * 2, ErrShape},
		{"NaN scale", mutate(func(w *wireMessage) { nanScale(&w.Pieces[1], 0x7fc0) }), sampleShapes(), n * 2, ErrNotFinite},
		{"Inf scale", mutate(func(w *wireMessage) { nanScale(&w.Pieces[2], 0x7f80) }), sampleShapes(), n * 2, ErrNotFinite},
		{"Inf Q scale", mutate(func(w *wireMessage) { binary.LittleEndian.PutUint16(w.Pieces[0].QScales, 0xff80) }), sampleShapes(), n * 2, ErrNotFinite},
		{"raw float64 values", mutate(func(w *wireMessage) {
			p := &w.Pieces[1]
			p.Bits, p.Scales, p.Codes = bitsRaw, nil, make([]byte, 8*11)
			binary.LittleEndian.PutUint64(p.Codes[16:], math.Float64bits(math.NaN()))
		}), sampleShapes(), n * 2, ErrUndecodable},
		{"norm too large", good, sampleShapes(), n * (1 - 1e-9), ErrNormTooLarge},
		{"huge finite scale", mutate(func(w *wireMessage) { nanScale(&w.Pieces[1], 0x7f7f) }), sampleShapes(), 1e30, ErrNormTooLarge},
	}
	for _, c := range cases {
		err := CheckShard(c.data, c.shapes, c.maxNorm, DefaultLimits)
		if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	// Decode reports the same non-finite values.
	bad, err := DecodeShard(cases[5].data, DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.Decode(); !errors.Is(err, ErrNotFinite) {
		t.Fatalf("Decode of a NaN scale: %v", err)
	}
}
