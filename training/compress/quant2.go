package compress

import (
	"encoding/binary"
	"math"
)

// bits2 is the 2-bit code width of low-rank factors (Config.FactorBits 2). A code c in
// [−2, 1] (two's complement, four to a byte, element 4i+j in bits 2j and 2j+1) stands for
// the level 2c+1 in {−3, −1, 1, 3}: a value is float64(2c+1)·float64(scale). The levels are
// those of a uniform quantiser with step 2·scale and no zero level, which loses less than
// the three symmetric levels of a two-bit code with a zero.
const bits2 = 2

// scaleFractions are the scales the 2-bit quantiser tries for a block, as fractions of
// max|v|/3 (the scale that clips nothing): it keeps the one with the least squared error.
var scaleFractions = [...]float64{1, 0.8, 0.65, 0.5}

// quantise2 writes the 2-bit codes and scales of vals into codes (zeroed, codeBytes long)
// and scales. Sender-side only: the receiver needs only the codes and scales.
func quantise2(codes, scales []byte, vals []float64, block int) error {
	for b := 0; b*block < len(vals); b++ {
		lo := b * block
		blk := vals[lo:min(lo+block, len(vals))]
		var m float64
		for _, v := range blk {
			m = max(m, math.Abs(v))
		}
		var best uint16
		bestErr := math.Inf(1)
		for _, f := range scaleFractions {
			h, err := bf16Up(m / 3 * f)
			if err != nil {
				return err
			}
			s := bf16(h)
			var e float64
			for _, v := range blk {
				d := v - float64(level2(v, s))*s
				e += d * d
			}
			if e < bestErr {
				best, bestErr = h, e
			}
		}
		binary.LittleEndian.PutUint16(scales[2*b:], best)
		s := bf16(best)
		for j, v := range blk {
			c := (level2(v, s) - 1) / 2
			codes[(lo+j)/4] |= byte(c&3) << (2 * ((lo + j) % 4))
		}
	}
	return nil
}

// level2 is the level in {−3, −1, 1, 3} nearest to v/s (1 when s is 0).
func level2(v, s float64) int {
	if !(s > 0) {
		return 1
	}
	c := max(-2, min(1, math.Floor(v/(2*s))))
	return 2*int(c) + 1
}

// dequantise2 writes the len(out) values stored as 2-bit codes and scales into out.
func dequantise2(out []float64, codes, scales []byte, block int) {
	for b := 0; b*block < len(out); b++ {
		s := bf16(binary.LittleEndian.Uint16(scales[2*b:]))
		for i := b * block; i < min((b+1)*block, len(out)); i++ {
			c := int8(codes[i/4]>>(2*(i%4))<<6) >> 6
			out[i] = float64(2*int(c)+1) * s
		}
	}
}
