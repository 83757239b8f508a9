package compress

import (
	"encoding/binary"
	"math"
)

// bits1 is the 1-bit code width of low-rank factors (Config.FactorBits 1): a value is its
// sign times its block's scale, the code bit set for + (eight to a byte, element 8i+j in
// bit j): float64(2c−1)·float64(scale) for the bit c. With error feedback this is signSGD's
// compressor with a scale per block; it carries more of a factor's energy per byte than two
// bits (2/π against about 0.88 for Gaussian values, in half the bits).
const bits1 = 1

// quantise1 writes the 1-bit codes and scales of vals into codes (zeroed, codeBytes long)
// and scales: each block's scale is its mean |v| (the least-squares scale of a sign code)
// rounded up to a bfloat16. Sender-side only.
func quantise1(codes, scales []byte, vals []float64, block int) error {
	for b := 0; b*block < len(vals); b++ {
		lo := b * block
		blk := vals[lo:min(lo+block, len(vals))]
		var sum float64
		for _, v := range blk {
			sum += math.Abs(v)
		}
		h, err := bf16Up(sum / float64(len(blk)))
		if err != nil {
			return err
		}
		binary.LittleEndian.PutUint16(scales[2*b:], h)
		for j, v := range blk {
			if v >= 0 {
				codes[(lo+j)/8] |= 1 << ((lo + j) % 8)
			}
		}
	}
	return nil
}

// dequantise1 writes the len(out) values stored as 1-bit codes and scales into out.
func dequantise1(out []float64, codes, scales []byte, block int) {
	for b := 0; b*block < len(out); b++ {
		s := bf16(binary.LittleEndian.Uint16(scales[2*b:]))
		for i := b * block; i < min((b+1)*block, len(out)); i++ {
			out[i] = float64(2*int(codes[i/8]>>(i%8)&1)-1) * s
		}
	}
}
