package compress

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Code widths on the wire.
const (
	bits4   = 4
	bits8   = 8
	bitsRaw = 64 // raw IEEE-754 float64, little-endian, no scales (Config.NoQuant; DecodeShard refuses it)
)

// ErrRange is returned by Encode when a value is too large for a bfloat16 block scale
// (|v| beyond about 1e38).
var ErrRange = errors.New("value out of range for quantisation")

func qmax(bits int) float64 {
	if bits == bits4 {
		return 7
	}
	return 127
}

// codeBytes is the byte length of n codes of the given width.
func codeBytes(n, bits int) int {
	switch bits {
	case bits1:
		return (n + 7) / 8
	case bits2:
		return (n + 3) / 4
	case bits4:
		return (n + 1) / 2
	case bits8:
		return n
	default:
		return 8 * n
	}
}

// scaleBytes is the byte length of the scales of n values.
func scaleBytes(n, bits, block int) int {
	if bits == bitsRaw {
		return 0
	}
	return 2 * ((n + block - 1) / block)
}

// bf16Up returns the smallest bfloat16 that is >= s (s >= 0 and finite).
func bf16Up(s float64) (uint16, error) {
	f := float32(s)
	if float64(f) < s {
		f = math.Nextafter32(f, float32(math.Inf(1)))
	}
	b := math.Float32bits(f)
	h := b >> 16
	if b&0xffff != 0 {
		h++
	}
	if h >= 0x7f80 {
		return 0, fmt.Errorf("%w: block scale %g", ErrRange, s)
	}
	return uint16(h), nil
}

// bf16 converts a stored scale to float64. NaN, infinite and negative scales are returned as
// they are; the decoder's finiteness check catches them.
func bf16(h uint16) float64 {
	return float64(math.Float32frombits(uint32(h) << 16))
}

// quantise writes the codes and scales of vals (widths 1, 2, 4, 8 or raw) into codes and
// scales, which must have codeBytes and scaleBytes lengths. codes must be zeroed for widths
// 1, 2 and 4.
func quantise(codes, scales []byte, vals []float64, bits, block int) error {
	if bits == bitsRaw {
		for i, v := range vals {
			binary.LittleEndian.PutUint64(codes[8*i:], math.Float64bits(v))
		}
		return nil
	}
	switch bits {
	case bits1:
		return quantise1(codes, scales, vals, block)
	case bits2:
		return quantise2(codes, scales, vals, block)
	}
	qm := qmax(bits)
	for b := 0; b*block < len(vals); b++ {
		blk := vals[b*block : min((b+1)*block, len(vals))]
		var m float64
		for _, v := range blk {
			m = max(m, math.Abs(v))
		}
		h, err := bf16Up(m / qm)
		if err != nil {
			return err
		}
		binary.LittleEndian.PutUint16(scales[2*b:], h)
		s := bf16(h)
		for j, v := range blk {
			var q float64
			if s > 0 {
				q = max(-qm, min(qm, math.Round(v/s)))
			}
			putCode(codes, b*block+j, int(q), bits)
		}
	}
	return nil
}

func putCode(codes []byte, i, q, bits int) {
	if bits == bits8 {
		codes[i] = byte(int8(q))
		return
	}
	nib := byte(q) & 0x0f
	if i%2 == 0 {
		codes[i/2] |= nib
	} else {
		codes[i/2] |= nib << 4
	}
}

// dequantise writes the len(out) values stored in codes and scales into out.
func dequantise(out []float64, codes, scales []byte, bits, block int) {
	if bits == bitsRaw {
		for i := range out {
			out[i] = math.Float64frombits(binary.LittleEndian.Uint64(codes[8*i:]))
		}
		return
	}
	switch bits {
	case bits1:
		dequantise1(out, codes, scales, block)
		return
	case bits2:
		dequantise2(out, codes, scales, block)
		return
	}
	for b := 0; b*block < len(out); b++ {
		s := bf16(binary.LittleEndian.Uint16(scales[2*b:]))
		hi := min((b+1)*block, len(out))
		for i := b * block; i < hi; i++ {
			var q int8
			if bits == bits8 {
				q = int8(codes[i])
			} else {
				q = int8(codes[i/2]>>(4*(i%2))<<4) >> 4
			}
			out[i] = float64(q) * s
		}
	}
}

// codesCanonical reports whether a code string's padding bits (int4, 2-bit, 1-bit) are zero.
func codesCanonical(codes []byte, n, bits int) bool {
	switch {
	case bits == bits1 && n%8 != 0:
		return codes[len(codes)-1]>>(n%8) == 0
	case bits == bits4 && n%2 != 0:
		return codes[len(codes)-1]>>4 == 0
	case bits == bits2 && n%4 != 0:
		return codes[len(codes)-1]>>(2*(n%4)) == 0
	}
	return true
}

// A factor (P or Qᵀ) is stored as ncol columns of n values each; every column is quantised on
// its own (its blocks start at the column's start and its int4 codes are padded to whole
// bytes), so no block mixes two columns. A dense piece is the case ncol = 1.

func quantiseCols(codes, scales []byte, vals []float64, ncol, bits, block int) error {
	if ncol == 0 {
		return nil
	}
	n := len(vals) / ncol
	cb, sb := codeBytes(n, bits), scaleBytes(n, bits, block)
	for k := 0; k < ncol; k++ {
		if err := quantise(codes[k*cb:(k+1)*cb], scales[k*sb:(k+1)*sb], vals[k*n:(k+1)*n], bits, block); err != nil {
			return err
		}
	}
	return nil
}

func dequantiseCols(out []float64, codes, scales []byte, ncol, bits, block int) {
	if ncol == 0 {
		return
	}
	n := len(out) / ncol
	cb, sb := codeBytes(n, bits), scaleBytes(n, bits, block)
	for k := 0; k < ncol; k++ {
		dequantise(out[k*n:(k+1)*n], codes[k*cb:(k+1)*cb], scales[k*sb:(k+1)*sb], bits, block)
	}
}

// colsBytes returns the code and scale byte lengths of ncol columns of n values.
func colsBytes(n, ncol, bits, block int) (codes, scales int) {
	return ncol * codeBytes(n, bits), ncol * scaleBytes(n, bits, block)
}

// colsCanonical reports whether every column's padding bits are zero.
func colsCanonical(codes []byte, n, ncol, bits int) bool {
	cb := codeBytes(n, bits)
	for k := 0; k < ncol; k++ {
		if !codesCanonical(codes[k*cb:(k+1)*cb], n, bits) {
			return false
		}
	}
	return true
}
