package compress

import (
	"math"
	"testing"
)

// naiveBF16Up finds the smallest bfloat16 >= s by stepping through bfloat16 values.
func naiveBF16Up(s float64) float64 {
	h := uint16(math.Float32bits(float32(s)) >> 16)
	for h > 0 && float64(math.Float32frombits(uint32(h-1)<<16)) >= s {
		h--
	}
	for float64(math.Float32frombits(uint32(h)<<16)) < s {
		h++
	}
	return float64(math.Float32frombits(uint32(h) << 16))
}

// naiveQuant quantises and dequantises one block the obvious way.
func naiveQuant(block []float64, qm float64) []float64 {
	m := 0.0
	for _, v := range block {
		m = math.Max(m, math.Abs(v))
	}
	s := naiveBF16Up(m / qm)
	out := make([]float64, len(block))
	for i, v := range block {
		if s == 0 {
			continue
		}
		q := math.Round(v / s)
		if q > qm || q < -qm {
			panic("clipped")
		}
		out[i] = q * s
	}
	return out
}

func TestQuantiseMatchesNaive(t *testing.T) {
	rng := newRand(1)
	for trial := 0; trial < 300; trial++ {
		bits := []int{bits4, bits8}[trial%2]
		block := []int{8, 32, 64}[trial%3]
		n := 1 + rng.IntN(200)
		scale := math.Pow(10, float64(rng.IntN(40)-30))
		vals := randTensor(rng, "", scale, n).Data
		if trial%7 == 0 { // an all-zero block and an exact-maximum value
			for i := 0; i < min(block, n); i++ {
				vals[i] = 0
			}
		}
		codes := make([]byte, codeBytes(n, bits))
		scales := make([]byte, scaleBytes(n, bits, block))
		if err := quantise(codes, scales, vals, bits, block); err != nil {
			t.Fatal(err)
		}
		got := make([]float64, n)
		dequantise(got, codes, scales, bits, block)
		for b := 0; b*block < n; b++ {
			hi := min(n, (b+1)*block)
			want := naiveQuant(vals[b*block:hi], qmax(bits))
			for i := range want {
				if math.Float64bits(got[b*block+i]) != math.Float64bits(want[i]) && !(got[b*block+i] == 0 && want[i] == 0) {
					t.Fatalf("trial %d bits %d: value %d = %v, naive %v", trial, bits, b*block+i, got[b*block+i], want[i])
				}
			}
		}
		if !codesCanonical(codes, n, bits) {
			t.Fatalf("trial %d: padding nibble set", trial)
		}
	}
}

func TestQuantiseErrorBound(t *testing.T) {
	rng := newRand(2)
	vals := randTensor(rng, "", 1, 4096).Data
	for _, bits := range []int{bits4, bits8} {
		codes := make([]byte, codeBytes(len(vals), bits))
		scales := make([]byte, scaleBytes(len(vals), bits, 64))
		if err := quantise(codes, scales, vals, bits, 64); err != nil {
			t.Fatal(err)
		}
		got := make([]float64, len(vals))
		dequantise(got, codes, scales, bits, 64)
		// Half a step per value, with the scale at most 2^-7 above max/qmax.
		for b := 0; b < len(vals)/64; b++ {
			m := 0.0
			for _, v := range vals[b*64 : (b+1)*64] {
				m = math.Max(m, math.Abs(v))
			}
			step := m / qmax(bits) * (1 + 1.0/128)
			for i := b * 64; i < (b+1)*64; i++ {
				if math.Abs(got[i]-vals[i]) > step/2 {
					t.Fatalf("bits %d value %d: error %g > half step %g", bits, i, math.Abs(got[i]-vals[i]), step/2)
				}
			}
		}
	}
}

func TestBF16UpRange(t *testing.T) {
	if _, err := bf16Up(1e39); err == nil {
		t.Fatal("scale beyond bfloat16 range accepted")
	}
	for _, s := range []float64{0, 1e-300, 1e-45, 1.5, 3e38} {
		h, err := bf16Up(s)
		if err != nil {
			t.Fatalf("%g: %v", s, err)
		}
		if bf16(h) < s || bf16(h) != naiveBF16Up(s) {
			t.Fatalf("bf16Up(%g) = %g, naive %g", s, bf16(h), naiveBF16Up(s))
		}
	}
}
