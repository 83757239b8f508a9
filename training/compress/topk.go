package compress

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// Codecs (Config.Codec).
const (
	CodecLowRank = "lowrank" // low-rank factors for the matrices, dense codes for the rest (the default)
	CodecTopK    = "topk"    // the largest values of the whole model, with their indices
)

// A sparse piece (Config.Codec "topk") is a whole tensor of which only some values are
// sent: Idx holds their indices in increasing order as unsigned varints of the gaps (the
// first index, then each index minus the one before minus one), each in its shortest
// form; Codes and Scales hold the values in that order, quantised like a dense piece. Every
// other value is zero. A sparse piece is never split across shards.

// indices parses a sparse piece's Idx against the tensor's n values: strictly increasing,
// below n, every varint canonical.
func (p *piece) indices(n int) ([]int, error) {
	var out []int
	prev := -1
	for b := p.Idx; len(b) > 0; {
		g, k := binary.Uvarint(b)
		if k <= 0 || len(binary.AppendUvarint(nil, g)) != k {
			return nil, fmt.Errorf("%w: index varint", ErrMalformed)
		}
		if g >= uint64(n) || prev+1+int(g) >= n {
			return nil, fmt.Errorf("%w: index past %d values", ErrMalformed, n)
		}
		prev += 1 + int(g)
		out = append(out, prev)
		b = b[k:]
	}
	return out, nil
}

// checkSparse checks a sparse piece of a tensor of n values.
func (p *piece) checkSparse(n, block int) error {
	if p.Rank != 0 || p.Lo != 0 || p.Hi != n || p.Bits == bits2 || p.Bits == bits1 {
		return fmt.Errorf("%w: sparse piece of rank %d, range [%d, %d) of %d, %d-bit", ErrMalformed, p.Rank, p.Lo, p.Hi, n, p.Bits)
	}
	if len(p.QCodes) != 0 || len(p.QScales) != 0 {
		return fmt.Errorf("%w: sparse tensor with Q factor", ErrMalformed)
	}
	idx, err := p.indices(n)
	if err != nil {
		return err
	}
	return checkCodes(p.Codes, p.Scales, len(idx), 1, p.Bits, block)
}

// reconstructSparse writes a sparse piece's values (zero where no index names them) into
// dst, the whole tensor.
func (p *piece) reconstructSparse(dst []float64, block int) error {
	idx, err := p.indices(len(dst))
	if err != nil {
		return err
	}
	vals := make([]float64, len(idx))
	dequantise(vals, p.Codes, p.Scales, p.Bits, block)
	if !finite(vals) {
		return fmt.Errorf("%w: tensor %q", ErrNotFinite, p.Name)
	}
	clear(dst)
	for i, j := range idx {
		dst[j] = vals[i]
	}
	return nil
}

// sparseBytes is the payload of a sparse piece with these sorted indices.
func sparseBytes(idx []int, bits, block int) int {
	n, prev := 0, -1
	for _, j := range idx {
		n += varintLen(uint64(j - prev - 1))
		prev = j
	}
	return n + codeBytes(len(idx), bits) + scaleBytes(len(idx), bits, block)
}

func varintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// entry is one value of the model as the top-k selection sees it.
type entry struct {
	mag    float64
	tensor int32
	index  int32
}

// selectTopK returns, per tensor, the sorted indices of the largest |x| of the whole model
// (ties: the earlier tensor, then the lower index) whose sparse pieces fit budget: the
// largest such count, found by bisection over the count.
func selectTopK(xs [][]float64, budget, bits, block int) [][]int {
	total := 0
	for _, x := range xs {
		total += len(x)
	}
	all := make([]entry, 0, total)
	for t, x := range xs {
		for i, v := range x {
			if v != 0 {
				all = append(all, entry{math.Abs(v), int32(t), int32(i)})
			}
		}
	}
	// Every value costs at least one index byte and half a code byte.
	hi := min(len(all), 2*budget/3)
	slices.SortFunc(all, byMagnitude)
	top := all[:hi]
	pick := func(k int) [][]int {
		out := make([][]int, len(xs))
		for _, e := range top[:k] {
			out[e.tensor] = append(out[e.tensor], int(e.index))
		}
		for _, s := range out {
			slices.Sort(s)
		}
		return out
	}
	fits := func(k int) bool {
		n := 0
		for _, s := range pick(k) {
			n += sparseBytes(s, bits, block)
		}
		return n <= budget
	}
	lo := 0 // fits(0): no values, no bytes
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if fits(mid) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return pick(lo)
}

func byMagnitude(a, b entry) int {
	if c := cmp.Compare(b.mag, a.mag); c != 0 {
		return c
	}
	if c := cmp.Compare(a.tensor, b.tensor); c != 0 {
		return c
	}
	return cmp.Compare(a.index, b.index)
}

// sparse quantises the values of x at idx into a sparse piece.
func (e *Encoder) sparse(t Tensor, x []float64, idx []int) (piece, error) {
	_, bits := e.bits()
	p := piece{Name: t.Name, Shape: slices.Clone(t.Shape), Lo: 0, Hi: len(x), Bits: bits, Sparse: true}
	vals := make([]float64, len(idx))
	prev := -1
	for i, j := range idx {
		vals[i] = x[j]
		p.Idx = binary.AppendUvarint(p.Idx, uint64(j-prev-1))
		prev = j
	}
	p.Codes = make([]byte, codeBytes(len(vals), bits))
	p.Scales = make([]byte, scaleBytes(len(vals), bits, e.cfg.BlockSize))
	return p, quantise(p.Codes, p.Scales, vals, bits, e.cfg.BlockSize)
}

// encodeTopK is Encode under Config.Codec "topk": every tensor becomes a sparse piece, the
// values chosen across the whole model by magnitude so that the payload fits the budget.
func (e *Encoder) encodeTopK(ts []Tensor) (*Message, error) {
	budget := e.cfg.ByteBudget
	if budget == 0 {
		return nil, fmt.Errorf("%w: top-k needs a byte budget", ErrConfig)
	}
	xs := make([][]float64, len(ts))
	for i, t := range ts {
		st := e.stateFor(t)
		e.addInput(st, st.residual, t.Data)
		xs[i] = st.residual
	}
	_, bits := e.bits()
	sel := selectTopK(xs, budget, bits, e.cfg.BlockSize)
	m := &Message{part: 0, parts: 1, block: e.cfg.BlockSize, maxShard: e.cfg.MaxShardBytes}
	for i, t := range ts {
		p, err := e.sparse(t, xs[i], sel[i])
		if err != nil {
			return nil, fmt.Errorf("encoding %q: %w", t.Name, err)
		}
		if err := e.settle(e.state[t.Name], p, xs[i], 0); err != nil { // sparse: settle sums ‖x‖² itself
			return nil, err
		}
		m.pieces = append(m.pieces, p)
	}
	return m, nil
}
