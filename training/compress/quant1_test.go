package compress

import (
	"errors"
	"math"
	"testing"
)

// naiveQuant1 quantises and dequantises one block to signs the obvious way: the scale is
// whichever of the bfloat16 values around the mean |v| is nearest to it (ties to the
// larger), every value its sign times the scale (+ for zero, and for every value when the
// scale is 0).
func naiveQuant1(block []float64) []float64 {
	var sum float64
	for _, v := range block {
		sum += math.Abs(v)
	}
	mean := sum / float64(len(block))
	up := naiveBF16Up(mean)
	down := float64(math.Float32frombits(math.Float32bits(float32(up)) - 1<<16))
	s := up
	if up > 0 && mean-down < up-mean {
		s = down
	}
	out := make([]float64, len(block))
	for i, v := range block {
		out[i] = s
		if v < 0 && s > 0 {
			out[i] = -s
		}
	}
	return out
}

func TestQuantise1MatchesNaive(t *testing.T) {
	rng := newRand(12)
	for trial := 0; trial < 300; trial++ {
		block := []int{8, 32, 64}[trial%3]
		n := 1 + rng.IntN(200)
		vals := randTensor(rng, "", math.Pow(10, float64(rng.IntN(40)-30)), n).Data
		if trial%7 == 0 {
			for i := 0; i < min(block, n); i++ {
				vals[i] = 0
			}
		}
		codes := make([]byte, codeBytes(n, bits1))
		scales := make([]byte, scaleBytes(n, bits1, block))
		if err := quantise(codes, scales, vals, bits1, block); err != nil {
			t.Fatal(err)
		}
		if !codesCanonical(codes, n, bits1) {
			t.Fatalf("trial %d: non-zero padding bits", trial)
		}
		got := make([]float64, n)
		dequantise(got, codes, scales, bits1, block)
		for b := 0; b*block < n; b++ {
			lo, hi := b*block, min((b+1)*block, n)
			want := naiveQuant1(vals[lo:hi])
			for i := lo; i < hi; i++ {
				if got[i] != want[i-lo] {
					t.Fatalf("trial %d: value %d (%v) dequantises to %v, naive %v", trial, i, vals[i], got[i], want[i-lo])
				}
			}
		}
	}
}

// The scale a block gets has no more squared error, for the signs it sends, than its
// bfloat16 neighbours: the mean |v| is the least-squares scale, and the nearest bfloat16 to
// it is the best one representable.
func TestQuantise1ScaleIsLeastSquares(t *testing.T) {
	rng := newRand(13)
	sqErr := func(vals []float64, s float64) float64 {
		var e float64
		for _, v := range vals {
			d := math.Abs(v) - s
			e += d * d
		}
		return e
	}
	for trial := 0; trial < 200; trial++ {
		vals := randTensor(rng, "", math.Pow(10, float64(rng.IntN(20)-10)), 64).Data
		codes, scales := make([]byte, codeBytes(64, bits1)), make([]byte, scaleBytes(64, bits1, 64))
		if err := quantise1(codes, scales, vals, 64); err != nil {
			t.Fatal(err)
		}
		h := uint16(scales[0]) | uint16(scales[1])<<8
		e := sqErr(vals, bf16(h))
		for _, n := range []uint16{h - 1, h + 1} {
			if o := sqErr(vals, bf16(n)); o < e {
				t.Fatalf("trial %d: scale %v has error %v, its neighbour %v %v", trial, bf16(h), e, bf16(n), o)
			}
		}
	}
}

// With 1-bit factors the sender fits Q to the quantised P̂ by least squares: what is left of
// x after P̂·Qᵀ (Q before its own quantisation) is orthogonal to every column of P̂.
func TestRefitIsLeastSquares(t *testing.T) {
	rng := newRand(15)
	for trial := 0; trial < 20; trial++ {
		rows, cols, rank := 40+rng.IntN(60), 30+rng.IntN(40), 1+rng.IntN(6)
		x := rankK(rng, "", rows, cols, rank+2).Data
		lr := newLowRank(rows, cols, rank, uint64(trial), "w")
		if _, err := lr.factor("w", x, 2, bits1, 8); err != nil {
			t.Fatal(err)
		}
		var xx float64
		for _, v := range x {
			xx += v * v
		}
		for k := 0; k < rank; k++ {
			var dot, pk float64 // column k of P̂ against the residual, and its norm²
			for i := 0; i < rows; i++ {
				p := lr.p[i*rank+k]
				pk += p * p
				for j := 0; j < cols; j++ {
					var fit float64
					for a := 0; a < rank; a++ {
						fit += lr.p[i*rank+a] * lr.qt[a*cols+j]
					}
					dot += p * (x[i*cols+j] - fit)
				}
			}
			if pk == 0 {
				continue
			}
			if math.Abs(dot) > 1e-9*math.Sqrt(pk*xx) {
				t.Fatalf("trial %d: column %d of P̂ has product %v with the residual (‖x‖² %v)", trial, k, dot, xx)
			}
		}
		var fit, captured float64 // the noted shares, and ‖P̂·Qᵀ‖²
		for _, g := range lr.fit {
			fit += g
		}
		for i := 0; i < rows; i++ {
			for j := 0; j < cols; j++ {
				var v float64
				for a := 0; a < rank; a++ {
					v += lr.p[i*rank+a] * lr.qt[a*cols+j]
				}
				captured += v * v
			}
		}
		if math.Abs(fit-captured) > 1e-9*xx || captured > xx {
			t.Fatalf("trial %d: shares sum to %v, the fit captures %v of %v", trial, fit, captured, xx)
		}
	}
}

// The refit captures more than Q fitted as if P̂ were orthonormal: on a rank-k matrix at
// rank k, the 1-bit message leaves less of x than it would without the refit.
func TestRefitCapturesMore(t *testing.T) {
	rng := newRand(16)
	for trial := 0; trial < 10; trial++ {
		rows, cols, rank := 96, 64, 1+trial%4
		x := rankK(rng, "w", rows, cols, rank)
		residual := func(refit bool) float64 {
			lr := newLowRank(rows, cols, rank, 1, "w")
			if _, err := lr.factor("w", x.Data, 2, bits1, 8); err != nil {
				t.Fatal(err)
			}
			if !refit { // Q as P̂ᵀ·x
				mulMtP(lr.qt, x.Data, lr.p, rows, cols, rank)
			}
			var e float64
			for i := 0; i < rows; i++ {
				for j := 0; j < cols; j++ {
					d := x.Data[i*cols+j]
					for a := 0; a < rank; a++ {
						d -= lr.p[i*rank+a] * lr.qt[a*cols+j]
					}
					e += d * d
				}
			}
			return e
		}
		with, without := residual(true), residual(false)
		if !(with < without) {
			t.Fatalf("trial %d: residual %v with the refit, %v without", trial, with, without)
		}
	}
}

// The decoder refuses 1-bit codes where the encoder never writes them: a dense piece, a
// block size that splits a code byte, non-zero padding.
func TestDecodeShardRefusesBad1Bit(t *testing.T) {
	rng := newRand(17)
	e := mustEncoder(t, Config{RankMax: 2, MinLowRank: 16, FactorBits: 1, BlockSize: 8})
	m := mustEncode(t, e, []Tensor{randTensor(rng, "w", 1, 7, 5), randTensor(rng, "v", 1, 3)})
	if _, err := DecodeShard(mustBytes(t, m), DefaultLimits); err != nil {
		t.Fatal(err)
	}
	cases := map[string]func(w *wireMessage){
		"dense 1-bit": func(w *wireMessage) {
			p := &w.Pieces[1]
			p.Bits, p.Codes = bits1, p.Codes[:codeBytes(3, bits1)]
		},
		"block 12": func(w *wireMessage) { w.Block = 12 },
		"padding":  func(w *wireMessage) { w.Pieces[0].Codes[len(w.Pieces[0].Codes)-1] |= 0x80 },
	}
	for name, mut := range cases {
		w := wireOf(m)
		mut(&w)
		if _, err := DecodeShard(encodeWire(t, w), DefaultLimits); !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrNonCanonical) {
			t.Errorf("%s: got %v", name, err)
		}
	}
}

func TestConfigFactorBits1NeedsWholeBytes(t *testing.T) {
	for _, c := range []struct {
		block int
		ok    bool
	}{{8, true}, {64, true}, {12, false}, {36, false}} {
		cfg := Config{FactorBits: 1, BlockSize: c.block}
		if err := cfg.Validate(); (err == nil) != c.ok {
			t.Errorf("block %d with 1-bit factors: %v", c.block, err)
		}
	}
	bad := Config{FactorBits: 3}
	if err := bad.Validate(); !errors.Is(err, ErrConfig) {
		t.Errorf("3-bit factors: %v", err)
	}
}
