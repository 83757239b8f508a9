package compress

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// ErrInput is returned (wrapped) by Encode for unusable tensors: empty or duplicate names,
// shapes that do not match the data or change between rounds, non-finite values.
var ErrInput = errors.New("invalid tensor")

// maxAbsInput bounds |delta+residual|, so that every block scale fits a bfloat16.
const maxAbsInput = 1e30

// Encoder compresses successive rounds of pseudo-gradients, keeping per tensor the
// error-feedback residual, the warm-start Q and the adaptive rank. It is not safe for
// concurrent use.
type Encoder struct {
	cfg     Config
	state   map[string]*tensorState
	order   []string
	scratch []float64
	// rounds is the number of messages encoded under a byte budget, and debt the bytes of
	// the first one's extra budget (Config.FirstBudget) not yet repaid.
	rounds uint64
	debt   int
	// bases are the shared bases of the message being encoded (EncodeRoundShared), coords
	// the coordinates on them the allocator computed; both only during one encoding.
	bases  Bases
	coords map[string][]float64
}

type tensorState struct {
	shape    []int
	residual []float64
	lr       *lowRank // nil for dense tensors
	captured float64
	// residualNorm is ‖residual‖ after the last round.
	residualNorm float64
	// pending: the tensor was left out of a message (Config.DenseEvery, Config.Fragments)
	// since it was last sent, and its residual already decayed once. held: it was left out
	// of the last one.
	pending, held bool
	// input is ‖x‖² of the last round's input (for a held tensor: of its residual).
	input float64
	// srank is the number of shared coordinates sent in the last round (Config.SharedRank).
	srank int
}

// TensorStats describes one tensor's last encoding.
type TensorStats struct {
	Name     string
	LowRank  bool
	Rank     int     // rank used for the last round (0 for dense tensors)
	NextRank int     // rank the next round will use
	Captured float64 // 1 − ‖residual‖²/‖delta+residual‖² after the last round
	Residual float64 // ‖residual‖ after the last round
	// Held: the tensor was not due in the last round (Config.DenseEvery,
	// Config.Fragments) and was left out of the message; Captured and Rank are then 0.
	Held bool
	// Input is ‖x‖² of the last round's input, x = delta + decayed residual: what
	// Captured is a fraction of.
	Input float64
	// SharedRank is the number of shared-basis coordinates the last round sent
	// (Config.SharedRank), besides Rank private terms.
	SharedRank int
}

// NewEncoder validates cfg (filling defaults) and returns an Encoder with empty state.
func NewEncoder(cfg Config) (*Encoder, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Encoder{cfg: cfg, state: map[string]*tensorState{}}, nil
}

// Config returns the validated configuration.
func (e *Encoder) Config() Config { return e.cfg }

// Encode compresses delta + FeedbackDecay·residual for every tensor, in the given order, and keeps what the
// receiver will not reconstruct as the new residual. The input slices are not retained or
// modified. On error the Encoder's state is unchanged. It is EncodeRound for round 0: with
// Config.DenseEvery above 1, a round's message must follow that round's schedule, so a
// node encodes with EncodeRound.
func (e *Encoder) Encode(ts []Tensor) (*Message, error) { return e.EncodeRound(0, ts) }

// EncodeRound is Encode for round r: the message carries the tensors Config.Due says are
// due in r, and every other tensor's pseudo-gradient is added to its residual, nothing
// of it sent. A tensor's residual is decayed (Config.FeedbackDecay) only in the round
// after the tensor was sent, so a tensor left out for some rounds sends, when next due,
// the sum of their pseudo-gradients and the decayed remainder of its last message.
func (e *Encoder) EncodeRound(r uint64, ts []Tensor) (*Message, error) {
	shapes := make([][]int, len(ts))
	for i, t := range ts {
		shapes[i] = t.Shape
	}
	return e.encode(ts, e.cfg.Due(r, shapes))
}

// EncodeRoundShared is EncodeRound for a round whose shared bases are b (DeriveBases of the
// aggregate every node holds when the round closes; nil or empty: none): with
// Config.SharedRank above 0, every matrix with a basis in b is sent as coordinates on it
// plus private low-rank terms. The receivers must bind the same bases to the message
// (Message.WithBases) to decode it.
func (e *Encoder) EncodeRoundShared(r uint64, ts []Tensor, b Bases) (*Message, error) {
	e.bases, e.coords = b, map[string][]float64{}
	defer func() { e.bases, e.coords = nil, nil }()
	return e.EncodeRound(r, ts)
}

// basisFor is the shared basis tensor t is sent on in this encoding, or nil.
func (e *Encoder) basisFor(t Tensor) *Basis {
	if e.cfg.SharedRank == 0 || e.bases == nil || !e.isLowRank(t.Shape) || !sharedShape(t.Shape, e.cfg.MinLowRank) {
		return nil
	}
	b := e.bases[t.Name]
	if b == nil || b.Rows != t.Shape[0] || b.K < 1 || len(b.U) != b.Rows*b.K {
		return nil
	}
	return b
}

// sharedMax is how many of b's columns a message may use.
func (e *Encoder) sharedMax(b *Basis) int { return min(b.K, e.cfg.SharedRank) }

// coordsOf returns C = Uᵀ·x (sharedMax rows of cols values) for tensor t's next input x
// (delta plus the decayed residual, as addInput forms it), computed once per encoding.
// Each value is summed over the rows of x in order, a product with a zero entry of U
// skipped; four rows are added at a time (addRows), in the same order.
func (e *Encoder) coordsOf(t Tensor, b *Basis) []float64 {
	if c := e.coords[t.Name]; c != nil {
		return c
	}
	rows, cols, k := t.Shape[0], t.Shape[1], e.sharedMax(b)
	var res []float64
	beta := 1.0
	if st := e.state[t.Name]; st != nil {
		res, beta = st.residual, e.decayOf(st)
	}
	c := make([]float64, k*cols)
	x := make([]float64, 4*cols) // four rows of x
	u := make([]float64, 4)
	for i0 := 0; i0 < rows; i0 += 4 {
		h := min(4, rows-i0)
		for r := 0; r < h; r++ {
			i := i0 + r
			d, xr := t.Data[i*cols:(i+1)*cols], x[r*cols:(r+1)*cols]
			for j, v := range d {
				xr[j] = v
				if res != nil {
					xr[j] = float64(beta*res[i*cols+j]) + v
				}
			}
		}
		for a := 0; a < k; a++ {
			for r := 0; r < h; r++ {
				u[r] = b.U[(i0+r)*b.K+a]
			}
			addRows(c[a*cols:(a+1)*cols], u[:h], x[:h*cols])
		}
	}
	e.coords[t.Name] = c
	return c
}

// addRows adds w[r]·x_r to dst for the rows x_r of x (len(w) rows of len(dst) values), in
// order of r, every product rounded, skipping every r whose w[r] is zero; four rows at a time when none of
// their weights is zero, which adds the same products in the same order.
func addRows(dst, w, x []float64) {
	n := len(dst)
	if len(w) == 4 && w[0] != 0 && w[1] != 0 && w[2] != 0 && w[3] != 0 {
		w0, w1, w2, w3 := w[0], w[1], w[2], w[3]
		x0, x1, x2, x3 := x[:n], x[n:2*n], x[2*n:3*n], x[3*n:4*n]
		for j := range dst {
			v := dst[j]
			v += float64(w0 * x0[j])
			v += float64(w1 * x1[j])
			v += float64(w2 * x2[j])
			dst[j] = v + float64(w3*x3[j])
		}
		return
	}
	for r, wr := range w {
		if wr == 0 {
			continue
		}
		for j, v := range x[r*n : (r+1)*n] {
			dst[j] += float64(wr * v)
		}
	}
}

// subtractRows subtracts w[r]·x_r from dst for the rows x_r of x (len(w) rows of
// len(dst) values), in order of r, every product rounded, skipping every r whose w[r] is zero; four rows at a
// time when none of their weights is zero, which subtracts the same products in the same
// order.
func subtractRows(dst, w, x []float64) {
	n := len(dst)
	r := 0
	for ; r+4 <= len(w); r += 4 {
		w0, w1, w2, w3 := w[r], w[r+1], w[r+2], w[r+3]
		if w0 == 0 || w1 == 0 || w2 == 0 || w3 == 0 {
			subtractRowsOneByOne(dst, w[r:r+4], x[r*n:(r+4)*n])
			continue
		}
		x0, x1, x2, x3 := x[r*n:(r+1)*n], x[(r+1)*n:(r+2)*n], x[(r+2)*n:(r+3)*n], x[(r+3)*n:(r+4)*n]
		for j := range dst {
			v := dst[j]
			v -= float64(w0 * x0[j])
			v -= float64(w1 * x1[j])
			v -= float64(w2 * x2[j])
			dst[j] = v - float64(w3*x3[j])
		}
	}
	subtractRowsOneByOne(dst, w[r:], x[r*n:])
}

func subtractRowsOneByOne(dst, w, x []float64) {
	n := len(dst)
	for r, wr := range w {
		if wr == 0 {
			continue
		}
		for j, v := range x[r*n : (r+1)*n] {
			dst[j] -= float64(wr * v)
		}
	}
}

// encodeShared sends x (rows × cols, t's input) as s coordinates on b plus private terms
// fitted to what the coordinates leave: the coordinates are quantised first, and the
// private power iterations run on x minus their reconstruction.
func (e *Encoder) encodeShared(t Tensor, st *tensorState, x []float64, b *Basis, s int) (piece, error) {
	rows, cols := t.Shape[0], t.Shape[1]
	bits, _ := e.bits()
	c := e.coordsOf(t, b)[:s*cols]
	nc, ns := colsBytes(cols, s, bits, e.cfg.BlockSize)
	codes, scales := make([]byte, nc), make([]byte, ns)
	if err := quantiseCols(codes, scales, c, s, bits, e.cfg.BlockSize); err != nil {
		return piece{}, err
	}
	ch := make([]float64, s*cols)
	dequantiseCols(ch, codes, scales, s, bits, e.cfg.BlockSize)
	rest := slices.Clone(x)
	for i := 0; i < rows; i++ {
		subtractRows(rest[i*cols:(i+1)*cols], b.U[i*b.K:i*b.K+s], ch)
	}
	p, err := st.lr.factor(t.Name, rest, e.cfg.PowerIters, bits, e.cfg.BlockSize)
	if err != nil {
		return piece{}, err
	}
	p.SRank, p.SCodes, p.SScales, p.basis = s, codes, scales, b
	return p, nil
}

// encode encodes the tensors of ts that are due (due nil: all) and accumulates the others.
func (e *Encoder) encode(ts []Tensor, due []bool) (*Message, error) {
	energy, err := e.check(ts)
	if err != nil {
		return nil, err
	}
	if e.cfg.Codec == CodecTopK {
		return e.encodeTopK(ts)
	}
	if e.cfg.ByteBudget > 0 {
		if err := e.budgetRanks(ts, due, energy); err != nil {
			return nil, err
		}
	}
	m := &Message{part: 0, parts: 1, block: e.cfg.BlockSize, maxShard: e.cfg.MaxShardBytes}
	m.pieces = make([]piece, 0, len(ts))
	for i, t := range ts {
		if due != nil && !due[i] {
			e.hold(t)
			continue
		}
		p, err := e.encodeOne(t, energy[i])
		if err != nil { // not reachable after check; kept as a guard
			return nil, fmt.Errorf("encoding %q: %w", t.Name, err)
		}
		m.pieces = append(m.pieces, p)
	}
	return m, nil
}

// check validates ts against itself and the Encoder's state without changing anything, and
// returns each tensor's input energy ‖x‖², x = delta + decayed residual, summed in order.
func (e *Encoder) check(ts []Tensor) ([]float64, error) {
	if len(ts) == 0 {
		return nil, fmt.Errorf("%w: no tensors", ErrInput)
	}
	energy := make([]float64, len(ts))
	seen := make(map[string]bool, len(ts))
	for k, t := range ts {
		if t.Name == "" || len(t.Name) > 256 || seen[t.Name] {
			return nil, fmt.Errorf("%w: empty, long or duplicate name %q", ErrInput, t.Name)
		}
		seen[t.Name] = true
		if len(t.Shape) == 0 || len(t.Shape) > maxDims || !positive(t.Shape) || numel(t.Shape) != len(t.Data) {
			return nil, fmt.Errorf("%w: %q shape %v with %d values", ErrInput, t.Name, t.Shape, len(t.Data))
		}
		st := e.state[t.Name]
		if st != nil && !slices.Equal(st.shape, t.Shape) {
			return nil, fmt.Errorf("%w: %q shape changed from %v to %v", ErrInput, t.Name, st.shape, t.Shape)
		}
		var res []float64
		b := 1.0
		if st != nil {
			res, b = st.residual, e.decayOf(st)
		}
		var en float64 // the sum in a variable, not in energy[k]: a register, not a store and a load per value
		for i, v := range t.Data {
			x := v
			if res != nil {
				x = float64(b*res[i]) + v
			}
			if !(math.Abs(x) <= maxAbsInput) { // one test in the loop: NaN fails it too
				if math.IsNaN(x) || math.IsInf(x, 0) {
					return nil, fmt.Errorf("%w: %q: %w", ErrInput, t.Name, ErrNotFinite)
				}
				return nil, fmt.Errorf("%w: %q: %w: |value| %g > %g", ErrInput, t.Name, ErrRange, x, maxAbsInput)
			}
			en += float64(x * x)
		}
		energy[k] = en
	}
	return energy, nil
}

// decayOf is the factor of a tensor's residual in its next input x = factor·residual +
// delta (the product rounded before the sum): FeedbackDecay, or 1 for a tensor left out of
// the last message (pending), whose residual was decayed already (1·r is r exactly).
func (e *Encoder) decayOf(st *tensorState) float64 {
	if st.pending {
		return 1
	}
	return e.cfg.FeedbackDecay
}

// addInput makes x (a tensor's residual) its next input: x = decayOf·x + delta.
func (e *Encoder) addInput(st *tensorState, x, delta []float64) {
	b := e.decayOf(st)
	for i, v := range delta {
		x[i] = float64(b*x[i]) + v
	}
}

// hold adds a checked tensor that is not due to its residual, sending nothing.
func (e *Encoder) hold(t Tensor) {
	st := e.stateFor(t)
	e.addInput(st, st.residual, t.Data)
	st.pending, st.held = true, true
	st.input = sumSquares(st.residual)
	st.captured, st.residualNorm = 0, math.Sqrt(st.input)
}

func positive(shape []int) bool {
	for _, d := range shape {
		if d < 1 || d > 1<<31 {
			return false
		}
	}
	return true
}

// encodeOne compresses one checked tensor, whose input energy check summed, and updates its
// state.
func (e *Encoder) encodeOne(t Tensor, energy float64) (piece, error) {
	st := e.stateFor(t)
	b := e.basisFor(t)
	if b != nil && e.coords != nil {
		e.coordsOf(t, b) // from the residual before addInput makes it the input
	}
	x := st.residual
	e.addInput(st, x, t.Data)
	st.pending, st.held = false, false
	var p piece
	var err error
	if b != nil && e.cfg.ByteBudget == 0 {
		st.srank = min(e.sharedMax(b), e.cfg.RankMax-st.lr.rank)
	} else if b == nil {
		st.srank = 0
	}
	switch {
	case st.lr != nil && st.srank > 0:
		p, err = e.encodeShared(t, st, x, b, st.srank)
	case st.lr != nil:
		bits, _ := e.bits()
		p, err = st.lr.factor(t.Name, x, e.cfg.PowerIters, bits, e.cfg.BlockSize)
	default:
		p, err = e.dense(t, x)
	}
	if err != nil {
		return piece{}, err
	}
	return p, e.settle(st, p, x, energy)
}

// settle makes x minus what the receiver reconstructs from p the tensor's new residual, and
// notes the captured energy (energy is ‖x‖² as Encoder.check summed it, used for a low-rank
// piece) (and, for a low-rank tensor, the gains and the next rank).
func (e *Encoder) settle(st *tensorState, p piece, x []float64, energy float64) error {
	var ex, er float64
	if p.lowRank() {
		var err error
		ex = energy
		if er, err = e.settleLowRank(p, x); err != nil {
			return err
		}
	} else {
		if cap(e.scratch) < len(x) {
			e.scratch = make([]float64, len(x))
		}
		recon := e.scratch[:len(x)]
		if err := p.reconstruct(recon, e.cfg.BlockSize); err != nil {
			return err
		}
		ex = sumSquares(x)
		for i := range x {
			x[i] -= recon[i]
		}
		er = sumSquares(x)
	}
	st.residualNorm, st.captured, st.input = math.Sqrt(er), 1, ex
	if ex > 0 {
		st.captured = 1 - er/ex
	}
	if st.lr != nil {
		st.lr.noteGains(ex)
		if e.cfg.ByteBudget == 0 {
			e.adapt(st)
		}
	}
	return nil
}

// settleLowRank subtracts a low-rank piece's reconstruction from x row by row, as the
// receiver reconstructs it, and returns ‖x‖² after, summed in element order as sumSquares
// sums it: the same bits as reconstructing the whole tensor first, in one pass over x. (‖x‖²
// before is Encoder.check's sum: the same values in the same order.)
func (e *Encoder) settleLowRank(p piece, x []float64) (er float64, err error) {
	f := p.factors(e.cfg.BlockSize)
	safe := f.bounded()
	row := make([]float64, f.cols)
	for i := 0; i < f.h; i++ {
		f.row(row, i)
		if !safe && !finite(row) {
			return 0, fmt.Errorf("%w: tensor %q", ErrNotFinite, p.Name)
		}
		xi := x[i*f.cols : (i+1)*f.cols]
		for j, v := range xi {
			d := v - row[j]
			er += float64(d * d)
			xi[j] = d
		}
	}
	return er, nil
}

func (e *Encoder) dense(t Tensor, x []float64) (piece, error) {
	_, bits := e.bits()
	p := piece{Name: t.Name, Shape: append([]int(nil), t.Shape...), Lo: 0, Hi: len(x), Bits: bits}
	p.Codes = make([]byte, codeBytes(len(x), bits))
	p.Scales = make([]byte, scaleBytes(len(x), bits, e.cfg.BlockSize))
	return p, quantise(p.Codes, p.Scales, x, bits, e.cfg.BlockSize)
}

func (e *Encoder) stateFor(t Tensor) *tensorState {
	if st := e.state[t.Name]; st != nil {
		return st
	}
	st := &tensorState{shape: append([]int(nil), t.Shape...), residual: make([]float64, len(t.Data))}
	if e.isLowRank(t.Shape) {
		lo, _ := e.rankBounds(t.Shape[0], t.Shape[1])
		st.lr = newLowRank(t.Shape[0], t.Shape[1], lo, e.cfg.Seed, t.Name)
	}
	e.state[t.Name] = st
	e.order = append(e.order, t.Name)
	return st
}

func (e *Encoder) rankBounds(rows, cols int) (lo, hi int) {
	hi = min(e.cfg.RankMax, rows, cols)
	return min(e.cfg.RankMin, hi), hi
}

// adapt sets the next round's rank from the energy captured in this one: grow by half (at
// least one) below the target, shrink by one above the midpoint between target and 1.
func (e *Encoder) adapt(st *tensorState) {
	lo, hi := e.rankBounds(st.lr.rows, st.lr.cols)
	r := st.lr.rank
	switch {
	case st.captured < e.cfg.EnergyTarget:
		r += max(1, r/2)
	case st.captured > e.cfg.EnergyTarget+(1-e.cfg.EnergyTarget)/2:
		r--
	}
	if r = max(lo, min(hi, r)); r != st.lr.rank {
		st.lr.resize(r)
	}
}

// Residual returns a copy of tensor name's error-feedback residual: what the Encoder's
// messages have not delivered of the pseudo-gradients it was given, before the next
// round's decay (Config.FeedbackDecay). It is nil for a tensor the Encoder has not seen.
func (e *Encoder) Residual(name string) []float64 {
	if st := e.state[name]; st != nil {
		return slices.Clone(st.residual)
	}
	return nil
}

// Stats describes the last encoding of every tensor the Encoder has seen, in first-seen order.
func (e *Encoder) Stats() []TensorStats {
	out := make([]TensorStats, 0, len(e.order))
	for _, name := range e.order {
		st := e.state[name]
		s := TensorStats{Name: name, Captured: st.captured, Residual: st.residualNorm, Held: st.held, Input: st.input, SharedRank: st.srank}
		if st.lr != nil {
			s.LowRank, s.NextRank = true, st.lr.rank
			if !st.held {
				s.Rank = st.lr.lastRank
			}
		}
		out = append(out, s)
	}
	return out
}
