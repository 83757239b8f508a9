package compress

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// MaxSharedRank bounds Config.SharedRank.
const MaxSharedRank = 64

// Basis is a shared orthonormal basis of the row space of one low-rank matrix (rows ≥
// cols): U, Rows × K, row-major, its columns orthonormal and ordered by the energy the
// aggregate it was derived from had along them. Every node derives the same bits from the
// same aggregate (DeriveBases), so a message sends only coordinates on it: C = Uᵀ·x, K × cols
// values, where a low-rank factor pair would take (Rows + cols) × rank.
type Basis struct {
	Rows, K int
	U       []float64
}

// Bases are the shared bases of a model's matrices, by tensor name. A matrix without one
// (wider than tall, or whose aggregate was zero) is sent with private factors only.
type Bases map[string]*Basis

// SharedOversample is how many directions beyond SharedRank DeriveBases looks at before it
// keeps the SharedRank strongest.
const SharedOversample = 8

// DeriveBases returns, for every low-rank matrix of agg (under cfg, validated) with at
// least as many rows as columns and a non-zero aggregate, the shared basis of the round
// whose aggregate agg is: the consensus a node holds, such as the outer optimizer's momentum
// buffer, a pure function of the closed rounds' inclusion lists. It is nil when
// cfg.SharedRank is 0.
//
// For a matrix A (m × n), with k = min(SharedRank + SharedOversample, n) and a fixed
// pseudo-random Ω (n × k, from the tensor's name): Z = Aᵀ·(A·Ω), orthonormalised into V;
// Y = A·V; the eigenvectors W of YᵀY (cyclic Jacobi), in order of decreasing eigenvalue,
// rotate Y, and the first SharedRank columns of Y·W, orthonormalised (modified Gram-Schmidt,
// twice), are U: a Rayleigh-Ritz estimate of A's leading left singular vectors after one
// power iteration. With cfg.SharedPowerIters -1, without it: A·Ω orthonormalised is Y, W
// the eigenvectors of (AᵀY)ᵀ(AᵀY), and U the first SharedRank columns of Y·W,
// orthonormalised as above: two products with A instead of three, the same basis (to
// rounding) when A has fewer than k directions. Directions whose eigenvalue is below 1e-20
// of the largest are dropped, so K may be less than SharedRank. Everything is plain
// float64 arithmetic in a fixed order with every product rounded (no fused multiply-add)
// and exactly rounded square roots, so every machine derives the same bits.
func DeriveBases(cfg Config, agg []Tensor) (Bases, error) {
	if cfg.SharedRank == 0 {
		return nil, nil
	}
	minLR := cfg.MinLowRank
	if minLR == 0 {
		minLR = DefaultMinLowRank
	}
	out := Bases{}
	for _, t := range agg {
		if !sharedShape(t.Shape, minLR) {
			continue
		}
		if numel(t.Shape) != len(t.Data) {
			return nil, fmt.Errorf("%w: %q shape %v with %d values", ErrInput, t.Name, t.Shape, len(t.Data))
		}
		if !finite(t.Data) {
			return nil, fmt.Errorf("%w: %q: %w", ErrInput, t.Name, ErrNotFinite)
		}
		if b := deriveBasis(t.Name, t.Data, t.Shape[0], t.Shape[1], cfg.SharedRank, cfg.SharedPowerIters >= 0); b != nil {
			out[t.Name] = b
		}
	}
	return out, nil
}

// sharedShape reports whether a matrix of this shape can have a shared basis: it is sent
// low-rank and has at least as many rows as columns.
func sharedShape(shape []int, minLowRank int) bool {
	return lowRankShape(shape, minLowRank) && shape[0] >= shape[1]
}

// deriveBasis is DeriveBases for one matrix a (m × n, m ≥ n); nil when a is zero. With
// power false it finds the range without the power iteration: Y = A·Ω orthonormalised
// into Q, the eigenvectors W of (AᵀQ)ᵀ(AᵀQ) = QᵀAAᵀQ, and U the first columns of Q·W,
// two products with A instead of three.
func deriveBasis(name string, a []float64, m, n, rank int, power bool) *Basis {
	k := min(rank+SharedOversample, n)
	omega := make([]float64, n*k)
	rng := rand.New(rand.NewPCG(0x5eed5ba515, fnv64(name)))
	for i := range omega {
		// uniform in [-1, 1): an integer scaled exactly, the same on every machine
		omega[i] = float64(int64(rng.Uint64()>>11)-(1<<52)) / (1 << 52)
	}
	y := mulAB(a, omega, m, n, k) // m × k
	var g []float64               // k × k, whose eigenvectors rotate y
	if power {
		z := mulAtB(a, y, m, n, k)               // n × k
		if k = orthonormalise(z, n, k); k == 0 { // A is zero (or numerically so)
			return nil
		}
		y = mulAB(a, z[:n*k], m, n, k) // m × k
		g = gram(y, m, k)
	} else {
		if k = orthonormalise(y, m, k); k == 0 {
			return nil
		}
		y = y[:m*k]
		g = gram(mulAtB(a, y, m, n, k), n, k)
	}
	w, lam := jacobiEigen(g, k)
	top := lam[0]
	if !(top > 0) {
		return nil
	}
	keep := 0
	for keep < min(rank, k) && lam[keep] > 1e-20*top {
		keep++
	}
	u := make([]float64, m*keep)
	for i := 0; i < m; i++ {
		yi := y[i*k : (i+1)*k]
		for c := 0; c < keep; c++ {
			var s float64
			for j, v := range yi {
				s += float64(v * w[j*k+c])
			}
			u[i*keep+c] = s
		}
	}
	keep = orthonormalise(u, m, keep)
	if keep == 0 {
		return nil
	}
	return &Basis{Rows: m, K: keep, U: u[:m*keep]}
}

// mulAB is A·B for A (m × n) and B (n × k), row-major, each entry summed in order of n
// from +0, every product rounded. It works against Bᵀ, two rows by three columns at a time
// (dots23), so that every value it loads serves several products.
func mulAB(a, b []float64, m, n, k int) []float64 {
	out := make([]float64, m*k)
	bt := transpose(make([]float64, k*n), b, n, k) // k × n
	mulABt(out, a, bt, m, n, k)
	return out
}

// mulAtB is Aᵀ·Y for A (m × n) and Y (m × k), row-major, each entry summed in order of m
// from +0, every product rounded. It takes A and Y a block of rows at a time, transposed,
// and adds each block's products to the sums the blocks before it left (mulABt), so that
// every entry is still summed in order of m.
func mulAtB(a, y []float64, m, n, k int) []float64 {
	const rows = 64
	out := make([]float64, n*k)
	at := make([]float64, n*rows) // the block of A, transposed: n × h
	yt := make([]float64, k*rows) // the block of Y, transposed: k × h
	for i := 0; i < m; i += rows {
		h := min(rows, m-i)
		transpose(at[:n*h], a[i*n:(i+h)*n], h, n)
		transpose(yt[:k*h], y[i*k:(i+h)*k], h, k)
		mulABt(out, at[:n*h], yt[:k*h], n, h, k)
	}
	return out
}

// mulABt adds X·Yᵀ to out (m × k) for X (m × n) and Y (k × n), row-major: to each entry
// the products of row i of X and row c of Y, in order of n, every product rounded.
func mulABt(out, x, y []float64, m, n, k int) {
	var s [6]float64
	i := 0
	for ; i+2 <= m; i += 2 {
		x0, x1 := x[i*n:(i+1)*n], x[(i+1)*n:(i+2)*n]
		o0, o1 := out[i*k:(i+1)*k], out[(i+1)*k:(i+2)*k]
		c := 0
		for ; c+3 <= k; c += 3 {
			s = [6]float64{o0[c], o0[c+1], o0[c+2], o1[c], o1[c+1], o1[c+2]}
			dots23(&s, x0, x1, y[c*n:(c+1)*n], y[(c+1)*n:(c+2)*n], y[(c+2)*n:(c+3)*n])
			copy(o0[c:c+3], s[:3])
			copy(o1[c:c+3], s[3:])
		}
		for ; c < k; c++ {
			o0[c] = addDot(o0[c], x0, y[c*n:(c+1)*n])
			o1[c] = addDot(o1[c], x1, y[c*n:(c+1)*n])
		}
	}
	if i < m {
		xi, oi := x[i*n:(i+1)*n], out[i*k:(i+1)*k]
		for c := range oi {
			oi[c] = addDot(oi[c], xi, y[c*n:(c+1)*n])
		}
	}
}

// dots23 adds to s[3a+b] the products x_a[r]·y_b[r] (a < 2, b < 3), in order of r, every
// product rounded: six sums at a time, each in its own variable (few enough to stay in
// registers).
func dots23(s *[6]float64, x0, x1, y0, y1, y2 []float64) {
	n := len(x0)
	x1, y0, y1, y2 = x1[:n], y0[:n], y1[:n], y2[:n]
	s00, s01, s02, s10, s11, s12 := s[0], s[1], s[2], s[3], s[4], s[5]
	for r := 0; r < n; r++ {
		a0, a1 := x0[r], x1[r]
		b0, b1, b2 := y0[r], y1[r], y2[r]
		s00 += float64(a0 * b0)
		s01 += float64(a0 * b1)
		s02 += float64(a0 * b2)
		s10 += float64(a1 * b0)
		s11 += float64(a1 * b1)
		s12 += float64(a1 * b2)
	}
	*s = [6]float64{s00, s01, s02, s10, s11, s12}
}

// addDot is s + Σ a_i·b_i, added in order, every product rounded.
func addDot(s float64, a, b []float64) float64 {
	b = b[:len(a)]
	for i, v := range a {
		s += float64(v * b[i])
	}
	return s
}

// gram is YᵀY (k × k) for Y (m × k), row-major, each entry summed in order of m from +0,
// every product rounded. Entry (b, a) is entry (a, b): the same products (a product does
// not depend on the order of its factors) summed in the same order, so only the upper
// triangle is summed.
func gram(y []float64, m, k int) []float64 {
	g := make([]float64, k*k)
	for i := 0; i < m; i++ {
		yi := y[i*k : (i+1)*k]
		for a, ya := range yi {
			ga := g[a*k : (a+1)*k]
			for b := a; b < k; b++ {
				ga[b] += float64(ya * yi[b])
			}
		}
	}
	for a := 0; a < k; a++ {
		for b := a + 1; b < k; b++ {
			g[b*k+a] = g[a*k+b]
		}
	}
	return g
}

// orthonormalise makes the k columns of x (m × k, row-major) orthonormal by modified
// Gram-Schmidt, run twice, in column order. A column left with less than 1e-10 of its norm
// before the second pass (or none at all) is dropped and the columns after it move left.
// It returns how many columns are kept; the first kept·m values of x, read as m × kept
// row-major, hold them.
func orthonormalise(x []float64, m, k int) int {
	col := make([][]float64, k)
	for c := range col {
		col[c] = make([]float64, m)
		for i := 0; i < m; i++ {
			col[c][i] = x[i*k+c]
		}
	}
	kept := col[:0]
	for c := 0; c < k; c++ {
		v := col[c]
		n0 := math.Sqrt(dotOf(v, v))
		for pass := 0; pass < 2; pass++ {
			for _, q := range kept {
				d := dotOf(q, v)
				for i := range v {
					v[i] -= float64(d * q[i])
				}
			}
		}
		nv := math.Sqrt(dotOf(v, v))
		if !(n0 > 0) || !(nv > 1e-10*n0) {
			continue
		}
		for i := range v {
			v[i] /= nv
		}
		kept = append(kept, v)
	}
	r := len(kept)
	for i := 0; i < m; i++ {
		for c, q := range kept {
			x[i*r+c] = q[i]
		}
	}
	return r
}

// dotOf is Σ a_i·b_i in order, every product rounded.
func dotOf(a, b []float64) float64 {
	var s float64
	for i, v := range a {
		s += float64(v * b[i])
	}
	return s
}

// jacobiEigen returns the eigenvectors (columns of w, k × k row-major) and eigenvalues of
// the symmetric g (k × k), in order of decreasing eigenvalue (ties by index), by cyclic
// Jacobi rotations in a fixed order: at most 50 sweeps, stopping when every off-diagonal
// value is below 1e-30 of the trace's magnitude.
func jacobiEigen(g []float64, k int) (w []float64, lam []float64) {
	a := append([]float64(nil), g...)
	v := make([]float64, k*k)
	for i := 0; i < k; i++ {
		v[i*k+i] = 1
	}
	var tr float64
	for i := 0; i < k; i++ {
		tr += math.Abs(a[i*k+i])
	}
	for sweep := 0; sweep < 50; sweep++ {
		var off float64
		for p := 0; p < k; p++ {
			for q := p + 1; q < k; q++ {
				off = max(off, math.Abs(a[p*k+q]))
			}
		}
		if !(off > 1e-30*tr) {
			break
		}
		for p := 0; p < k; p++ {
			for q := p + 1; q < k; q++ {
				apq := a[p*k+q]
				if apq == 0 {
					continue
				}
				theta := (a[q*k+q] - a[p*k+p]) / float64(2*apq)
				t := 1 / (math.Abs(theta) + math.Sqrt(float64(theta*theta)+1))
				if theta < 0 {
					t = -t
				}
				if math.IsInf(float64(theta*theta), 0) {
					t = 1 / float64(2*theta)
				}
				c := 1 / math.Sqrt(float64(t*t)+1)
				s := float64(t * c)
				for r := 0; r < k; r++ { // columns p and q
					arp, arq := a[r*k+p], a[r*k+q]
					a[r*k+p] = float64(c*arp) - float64(s*arq)
					a[r*k+q] = float64(s*arp) + float64(c*arq)
				}
				for r := 0; r < k; r++ { // rows p and q
					apr, aqr := a[p*k+r], a[q*k+r]
					a[p*k+r] = float64(c*apr) - float64(s*aqr)
					a[q*k+r] = float64(s*apr) + float64(c*aqr)
				}
				for r := 0; r < k; r++ {
					vrp, vrq := v[r*k+p], v[r*k+q]
					v[r*k+p] = float64(c*vrp) - float64(s*vrq)
					v[r*k+q] = float64(s*vrp) + float64(c*vrq)
				}
			}
		}
	}
	order := make([]int, k)
	for i := range order {
		order[i] = i
	}
	// insertion sort by decreasing eigenvalue, stable
	for i := 1; i < k; i++ {
		for j := i; j > 0 && a[order[j]*k+order[j]] > a[order[j-1]*k+order[j-1]]; j-- {
			order[j], order[j-1] = order[j-1], order[j]
		}
	}
	w, lam = make([]float64, k*k), make([]float64, k)
	for c, o := range order {
		lam[c] = a[o*k+o]
		for r := 0; r < k; r++ {
			w[r*k+c] = v[r*k+o]
		}
	}
	return w, lam
}
