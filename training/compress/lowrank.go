package compress

import (
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
)

// lowRank is the per-tensor state of a low-rank tensor.
type lowRank struct {
	rows, cols int
	rank       int
	lastRank   int       // rank of the last factor call
	q          []float64 // warm-start Q, cols × rank row-major
	rng        *rand.Rand
	// scratch, reused across rounds
	p, tau, work []float64
}

func newLowRank(rows, cols, rank int, seed uint64, name string) *lowRank {
	lr := &lowRank{rows: rows, cols: cols, rng: rand.New(rand.NewPCG(seed, fnv64(name)))}
	lr.resize(rank)
	return lr
}

// resize changes the rank, keeping the first columns of Q and filling new ones with
// deterministic Gaussian values.
func (lr *lowRank) resize(rank int) {
	old := lr.q
	lr.q = make([]float64, lr.cols*rank)
	for j := 0; j < lr.cols; j++ {
		for k := 0; k < rank; k++ {
			if k < lr.rank {
				lr.q[j*rank+k] = old[j*lr.rank+k]
			} else {
				lr.q[j*rank+k] = lr.rng.NormFloat64()
			}
		}
	}
	lr.rank = rank
	lr.p = make([]float64, lr.rows*rank)
	lr.tau = make([]float64, rank)
	lr.work = nil
}

// factor runs the power iterations on x (rows × cols) and returns the quantised piece,
// covering all rows. x is not modified.
func (lr *lowRank) factor(name string, x []float64, iters, bits, block int) (piece, error) {
	m := general(lr.rows, lr.cols, x)
	q := general(lr.cols, lr.rank, lr.q)
	p := general(lr.rows, lr.rank, lr.p)
	lr.lastRank = lr.rank
	pc := piece{Name: name, Shape: []int{lr.rows, lr.cols}, Lo: 0, Hi: lr.rows, Rank: lr.rank, Bits: bits}
	for it := 0; it < iters; it++ {
		blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, m, q, 0, p)
		lr.orthonormalise(p)
		if it == iters-1 {
			// Quantise P first and fit Q to the quantised P̂, so Q absorbs P's error.
			pc.Codes = make([]byte, codeBytes(len(lr.p), bits))
			pc.Scales = make([]byte, scaleBytes(len(lr.p), bits, block))
			if err := quantise(pc.Codes, pc.Scales, lr.p, bits, block); err != nil {
				return piece{}, err
			}
			dequantise(lr.p, pc.Codes, pc.Scales, bits, block)
		}
		blas64.Gemm(blas.Trans, blas.NoTrans, 1, m, p, 0, q)
	}
	qt := make([]float64, len(lr.q)) // Qᵀ, rank × cols
	for j := 0; j < lr.cols; j++ {
		for k := 0; k < lr.rank; k++ {
			qt[k*lr.cols+j] = lr.q[j*lr.rank+k]
		}
	}
	pc.QCodes = make([]byte, codeBytes(len(qt), bits))
	pc.QScales = make([]byte, scaleBytes(len(qt), bits, block))
	return pc, quantise(pc.QCodes, pc.QScales, qt, bits, block)
}

// orthonormalise replaces p's columns by an orthonormal basis of their span (thin Householder
// QR). Columns that are linearly dependent or zero still come out orthonormal.
func (lr *lowRank) orthonormalise(p blas64.General) {
	if lr.work == nil {
		var w [1]float64
		lapack64.Geqrf(p, lr.tau, w[:], -1)
		n := int(w[0])
		lapack64.Orgqr(p, lr.tau, w[:], -1)
		lr.work = make([]float64, max(n, int(w[0]), lr.rows, 1))
	}
	lapack64.Geqrf(p, lr.tau, lr.work, len(lr.work))
	lapack64.Orgqr(p, lr.tau, lr.work, len(lr.work))
}

func general(r, c int, data []float64) blas64.General {
	return blas64.General{Rows: r, Cols: c, Stride: c, Data: data}
}

// fnv64 is FNV-1a, used to derive a per-tensor random stream from the seed and the name.
func fnv64(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// sumSquares returns Σ v², summed in order with rounded products.
func sumSquares(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += float64(x * x)
	}
	return s
}

func allFinite(v []float64) bool {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}
