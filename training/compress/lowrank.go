package compress

import (
	"math"
	"math/rand/v2"
	"slices"

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
	src        *rand.PCG // rng's source, saved by Encoder.State
	rng        *rand.Rand
	// scratch, reused across rounds
	p, qt, tau, work []float64
	dead             []int // columns of P zeroed in the last orthonormalisation
	// gains[k] is the energy of component k in the last round (‖column k of Q‖², P being
	// near orthonormal, or fit[k] after a refit) and energy that round's ‖x‖²:
	// Config.ByteBudget's spectrum estimate.
	gains  []float64
	energy float64
	// fit[k], when the last factor call refitted Q to the quantised P̂ (1-bit factors), is
	// component k's share of the energy the fit captures, ‖P̂·Qᵀ‖² = Σ_k ⟨Qᵀ_k, (P̂ᵀx)_k⟩
	// (rows k of Qᵀ and of P̂ᵀ·x); else nil.
	fit []float64
}

// noteGains records the energy of each component of the last factor call, out of energy.
func (lr *lowRank) noteGains(energy float64) {
	lr.energy = energy
	lr.gains = lr.gains[:0]
	for k := 0; k < lr.lastRank; k++ {
		g := sumSquares(lr.qt[k*lr.cols : (k+1)*lr.cols])
		if lr.fit != nil {
			g = lr.fit[k]
		}
		lr.gains = append(lr.gains, g)
	}
}

func newLowRank(rows, cols, rank int, seed uint64, name string) *lowRank {
	src := rand.NewPCG(seed, fnv64(name))
	lr := &lowRank{rows: rows, cols: cols, src: src, rng: rand.New(src)}
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
	lr.qt = make([]float64, lr.cols*rank)
	lr.tau = make([]float64, rank)
	lr.work = nil
}

// factor runs the power iterations on x (rows × cols) and returns the quantised piece,
// covering all rows. x is not modified.
func (lr *lowRank) factor(name string, x []float64, iters, bits, block int) (piece, error) {
	p := general(lr.rows, lr.rank, lr.p)
	lr.lastRank, lr.fit = lr.rank, nil
	pc := piece{Name: name, Shape: []int{lr.rows, lr.cols}, Lo: 0, Hi: lr.rows, Rank: lr.rank, Bits: bits}
	cm := make([]float64, lr.rows*lr.rank) // P in column-major order
	for it := 0; it < iters; it++ {
		mulMQ(p.Data, x, lr.q, lr.rows, lr.cols, lr.rank, lr.qt)
		lr.orthonormalise(p)
		if it == iters-1 {
			// Quantise P first and fit Q to the quantised P̂, so Q absorbs P's error.
			pcm := transpose(cm, lr.p, lr.rows, lr.rank)
			nc, ns := colsBytes(lr.rows, lr.rank, bits, block)
			pc.Codes, pc.Scales = make([]byte, nc), make([]byte, ns)
			if err := quantiseCols(pc.Codes, pc.Scales, pcm, lr.rank, bits, block); err != nil {
				return piece{}, err
			}
			dequantiseCols(pcm, pc.Codes, pc.Scales, lr.rank, bits, block)
			transpose(lr.p, pcm, lr.rank, lr.rows)
		}
		mulMtP(lr.qt, x, lr.p, lr.rows, lr.cols, lr.rank)
		if it == iters-1 && bits == bits1 {
			lr.refit()
		}
		transpose(lr.q, lr.qt, lr.rank, lr.cols)
	}
	qt := lr.qt
	lr.refresh()
	nc, ns := colsBytes(lr.cols, lr.rank, bits, block)
	pc.QCodes, pc.QScales = make([]byte, nc), make([]byte, ns)
	return pc, quantiseCols(pc.QCodes, pc.QScales, qt, lr.rank, bits, block)
}

// refit replaces Qᵀ = P̂ᵀ·X (lr.qt) by the least-squares fit of X on the quantised P̂ (lr.p),
// (P̂ᵀP̂)⁻¹·P̂ᵀ·X, and notes each component's share of the energy it captures (lr.fit). 1-bit
// codes shrink P's columns (a sign times the mean |v| of a block keeps about 2/π of a
// column's energy), and Q fitted as if P̂ were orthonormal would carry the shrinkage into
// the message; 2- and 4-bit codes lose little and are not refitted. A dead (zero) column
// keeps its zero row of Qᵀ. Sender-side only.
func (lr *lowRank) refit() {
	r := lr.rank
	b := slices.Clone(lr.qt) // P̂ᵀ·X
	defer func() {
		lr.fit = make([]float64, r)
		for k := range lr.fit {
			var s float64
			for j := k * lr.cols; j < (k+1)*lr.cols; j++ {
				s += lr.qt[j] * b[j]
			}
			lr.fit[k] = max(0, s)
		}
	}()
	g := make([]float64, r*r)
	pn := make([]float64, r)
	for i := 0; i < lr.rows; i++ {
		pi := lr.p[i*r : (i+1)*r]
		for a := 0; a < r; a++ {
			for b := a; b < r; b++ {
				g[a*r+b] += pi[a] * pi[b]
			}
		}
	}
	for k := 0; k < r; k++ {
		pn[k] = g[k*r+k]
		if !(g[k*r+k] > 0) {
			for b := k; b < r; b++ {
				g[k*r+b] = 0
			}
			g[k*r+k] = 1
		}
	}
	t, ok := lapack64.Potrf(blas64.Symmetric{Uplo: blas.Upper, N: r, Stride: r, Data: g})
	if !ok { // P̂ rank-deficient: scale each row by its own column's norm instead
		for k := 0; k < r; k++ {
			if pn[k] > 0 {
				row := lr.qt[k*lr.cols : (k+1)*lr.cols]
				for j := range row {
					row[j] /= pn[k]
				}
			}
		}
		return
	}
	lapack64.Potrs(t, general(r, lr.cols, lr.qt))
}

// transpose writes the transpose of the r×c row-major src into dst and returns dst.
func transpose(dst, src []float64, r, c int) []float64 {
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			dst[j*r+i] = src[i*c+j]
		}
	}
	return dst
}

// orthonormalise replaces p's columns by an orthonormal basis of their span (thin Householder
// QR). A column that adds (almost) nothing to the span of the ones before it (|R_kk| at most
// 1e-9 of the largest) is set to zero rather than to an arbitrary basis vector, and is marked
// in lr.dead so that the next round's warm start gets a fresh random column there.
func (lr *lowRank) orthonormalise(p blas64.General) {
	if lr.work == nil {
		var w [1]float64
		lapack64.Geqrf(p, lr.tau, w[:], -1)
		n := int(w[0])
		lapack64.Orgqr(p, lr.tau, w[:], -1)
		lr.work = make([]float64, max(n, int(w[0]), lr.rows, 1))
	}
	lapack64.Geqrf(p, lr.tau, lr.work, len(lr.work))
	var big float64
	for k := 0; k < lr.rank; k++ {
		big = max(big, math.Abs(p.Data[k*p.Stride+k]))
	}
	lr.dead = lr.dead[:0]
	for k := 0; k < lr.rank; k++ {
		if math.Abs(p.Data[k*p.Stride+k]) <= 1e-9*big || big == 0 {
			lr.dead = append(lr.dead, k)
		}
	}
	lapack64.Orgqr(p, lr.tau, lr.work, len(lr.work))
	for _, k := range lr.dead {
		for i := 0; i < lr.rows; i++ {
			p.Data[i*p.Stride+k] = 0
		}
	}
}

// refresh gives the warm-start Q fresh random columns where P's column was dead.
func (lr *lowRank) refresh() {
	for _, k := range lr.dead {
		for j := 0; j < lr.cols; j++ {
			lr.q[j*lr.rank+k] = lr.rng.NormFloat64()
		}
	}
}

// mulMQ computes p = M·Q (rows×rank, row-major) as dot products of M's rows with Qᵀ's rows
// (Q is cols×rank row-major; qt is scratch for Qᵀ). Sender-side only: it need not be
// reproducible across machines, only from run to run.
func mulMQ(p, m, q []float64, rows, cols, rank int, qt []float64) {
	transpose(qt, q, cols, rank)
	for i := 0; i < rows; i++ {
		mi := blas64.Vector{N: cols, Inc: 1, Data: m[i*cols : (i+1)*cols]}
		for k := 0; k < rank; k++ {
			p[i*rank+k] = blas64.Dot(mi, blas64.Vector{N: cols, Inc: 1, Data: qt[k*cols : (k+1)*cols]})
		}
	}
}

// mulMtP computes Qᵀ = (Mᵀ·P)ᵀ (rank×cols, row-major) by accumulating rows of M.
func mulMtP(qt, m, p []float64, rows, cols, rank int) {
	clear(qt)
	for i := 0; i < rows; i++ {
		mi := blas64.Vector{N: cols, Inc: 1, Data: m[i*cols : (i+1)*cols]}
		for k := 0; k < rank; k++ {
			if a := p[i*rank+k]; a != 0 {
				blas64.Axpy(a, mi, blas64.Vector{N: cols, Inc: 1, Data: qt[k*cols : (k+1)*cols]})
			}
		}
	}
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
