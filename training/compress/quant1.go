package compress

import (
	"encoding/binary"
	"math"
)

// bits1 is the 1-bit code width of low-rank factors (Config.FactorBits 1): a sign per value
// and one scale per block, as signSGD-style quantisers send. Bit i%8 of byte i/8 set stands
// for +scale, clear for −scale: a value is float64(2b−1)·float64(scale). The scale is the
// block's mean |v| rounded to the nearest bfloat16, the scale with the least squared error
// for given signs; error feedback carries what the signs lose.
const bits1 = 1

// quantise1 writes the 1-bit codes and scales of vals into codes (zeroed, codeBytes long) and
// scales. Sender-side only: the receiver needs only the codes and scales. A value >= 0 (and
// every value of a block whose scale is 0) takes the bit 1.
func quantise1(codes, scales []byte, vals []float64, block int) error {
	for b := 0; b*block < len(vals); b++ {
		lo := b * block
		blk := vals[lo:min(lo+block, len(vals))]
		var sum float64
		for _, v := range blk {
			sum += math.Abs(v)
		}
		h, err := bf16Nearest(sum / float64(len(blk)))
		if err != nil {
			return err
		}
		binary.LittleEndian.PutUint16(scales[2*b:], h)
		for j, v := range blk {
			if !(v < 0) || h == 0 {
				codes[(lo+j)/8] |= 1 << ((lo + j) % 8)
			}
		}
	}
	return nil
}

// bf16Nearest returns the bfloat16 nearest to s (s >= 0 and finite), ties to the larger.
func bf16Nearest(s float64) (uint16, error) {
	h, err := bf16Up(s)
	if err != nil || h == 0 || s-bf16(h-1) >= bf16(h)-s {
		return h, err
	}
	return h - 1, nil
}

// dequantise1 writes the len(out) values stored as 1-bit codes and scales into out.
func dequantise1(out []float64, codes, scales []byte, block int) {
	for b := 0; b*block < len(out); b++ {
		s := bf16(binary.LittleEndian.Uint16(scales[2*b:]))
		for i := b * block; i < min((b+1)*block, len(out)); i++ {
			out[i] = level1(codes, i) * s
		}
	}
}

// level1 is the level, −1 or +1, of the i-th 1-bit code.
func level1(codes []byte, i int) float64 {
	return float64(2*int(codes[i/8]>>(i%8)&1) - 1)
}
