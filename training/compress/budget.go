package compress

import (
	"errors"
	"fmt"
	"slices"
)

// ErrBudget is returned (wrapped) by Encode when Config.ByteBudget cannot hold the dense
// tensors and every low-rank tensor at its lowest rank.
var ErrBudget = errors.New("byte budget too small")

// PayloadBytes is the number of code and scale bytes in m: all of its encoding but the
// framing (names, shapes and CBOR headers, a few dozen bytes per tensor).
func (m *Message) PayloadBytes() int {
	n := 0
	for _, p := range m.pieces {
		n += len(p.Codes) + len(p.Scales) + len(p.QCodes) + len(p.QScales) + len(p.SCodes) + len(p.SScales)
	}
	return n
}

// rankChoice is one low-rank tensor as the allocator sees it: its rank bounds, the bytes one
// more rank costs, and the estimated energy of each component (non-increasing).
type rankChoice struct {
	lo, hi int
	step   int
	gain   []float64 // gain[k] for k < hi
}

// allocateRanks picks a rank in [lo, hi] for every choice so that the ranks' bytes stay
// within budget, greedily: starting from the lowest ranks, it adds the component with the
// most estimated energy per byte that still fits (ties to the earlier tensor), until none
// does. It fails with ErrBudget when the lowest ranks alone exceed the budget.
func allocateRanks(cs []rankChoice, budget int) ([]int, error) {
	ranks := make([]int, len(cs))
	spent := 0
	for i, c := range cs {
		ranks[i] = c.lo
		spent += c.lo * c.step
	}
	if spent > budget {
		return nil, fmt.Errorf("%w: %d bytes at the lowest ranks, budget %d", ErrBudget, spent, budget)
	}
	for {
		best, bestD := -1, 0.0
		for i, c := range cs {
			r := ranks[i]
			if r >= c.hi || spent+c.step > budget || !(c.gain[r] > 0) {
				continue
			}
			if d := c.gain[r] / float64(c.step); best < 0 || d > bestD {
				best, bestD = i, d
			}
		}
		if best < 0 {
			return ranks, nil
		}
		ranks[best]++
		spent += cs[best].step
	}
}

// isLowRank reports whether a tensor of this shape is sent as low-rank factors.
func (e *Encoder) isLowRank(shape []int) bool {
	return e.cfg.Codec != CodecTopK && lowRankShape(shape, e.cfg.MinLowRank)
}

// budgetRanks sets this round's rank of every low-rank tensor in ts (checked) that is due
// (due nil: all) so that the message's payload fits this round's budget (roundBudget);
// only the tensors that are due take bytes. Nothing changes on error.
func (e *Encoder) budgetRanks(ts []Tensor, due []bool, energy []float64) error {
	var cs []rankChoice
	var spill []int   // the private choices of matrices with a basis, in cs
	var spillHi []int // and their highest ranks
	dense, lowest := 0, 0
	for i, t := range ts {
		if !e.isLowRank(t.Shape) {
			if due == nil || due[i] {
				dense += e.denseBytes(len(t.Data))
			}
			continue
		}
		if due != nil && !due[i] {
			continue // a matrix not due (Config.Fragments) takes no bytes and keeps its rank
		}
		c := e.choice(t, energy[i])
		b := e.basisFor(t)
		if b != nil {
			spill, spillHi = append(spill, len(cs)), append(spillHi, c.hi)
			c.hi = c.lo // the private terms stay at the lowest rank: the rest buys coordinates
		}
		lowest += c.lo * c.step
		cs = append(cs, c)
		if b != nil {
			cs = append(cs, e.sharedChoice(t, b, c.lo))
		}
	}
	total, debt := e.roundBudget(dense + lowest)
	budget := total - dense
	if budget < 0 {
		return fmt.Errorf("%w: the dense tensors alone take %d bytes over the budget %d", ErrBudget, -budget, total)
	}
	ranks, err := allocateRanks(cs, budget)
	if err != nil {
		return err
	}
	if len(spill) > 0 {
		e.spillOver(cs, ranks, spill, spillHi, budget)
	}
	e.rounds, e.debt = e.rounds+1, debt
	j := 0
	for i, t := range ts {
		if !e.isLowRank(t.Shape) || due != nil && !due[i] {
			continue
		}
		st := e.stateFor(t)
		if ranks[j] != st.lr.rank {
			st.lr.resize(ranks[j])
		}
		j++
		st.srank = 0
		if e.basisFor(t) != nil {
			st.srank = ranks[j]
			j++
		}
	}
	return nil
}

// spillOver gives what the coordinates left of the budget (every basis used up) to more
// private terms of the matrices with a basis, by the allocator's estimated energy per byte.
func (e *Encoder) spillOver(cs []rankChoice, ranks, spill, spillHi []int, budget int) {
	spent := 0
	for i, c := range cs {
		spent += ranks[i] * c.step
	}
	more := make([]rankChoice, len(spill))
	base := 0
	for k, i := range spill {
		more[k] = cs[i]
		more[k].lo, more[k].hi = ranks[i], max(ranks[i], min(spillHi[k], e.cfg.RankMax-ranks[i+1]))
		base += ranks[i] * cs[i].step
	}
	extra, err := allocateRanks(more, budget-spent+base)
	if err != nil { // not reachable: the ranks so far fit
		return
	}
	for k, i := range spill {
		ranks[i] = extra[k]
	}
}

// sharedChoice describes tensor t's coordinates on its shared basis b for the allocator:
// from none to all of the basis' columns (at most RankMax less the private rank, which
// receivers bound together), each costing one column of cols codes and scales, its gain
// the exact energy of its coordinates in this round's input.
func (e *Encoder) sharedChoice(t Tensor, b *Basis, private int) rankChoice {
	cols := t.Shape[1]
	fb, _ := e.bits()
	cb, sb := colsBytes(cols, 1, fb, e.cfg.BlockSize)
	k := min(e.sharedMax(b), e.cfg.RankMax-private)
	c := e.coordsOf(t, b)
	gain := make([]float64, k)
	for a := range gain {
		gain[a] = sumSquares(c[a*cols : (a+1)*cols])
	}
	return rankChoice{lo: 0, hi: k, step: cb + sb, gain: gain}
}

// roundBudget is the budget of the next message and the debt left after it, given the
// bytes the dense tensors and the lowest ranks need: the first message gets FirstBudget
// times ByteBudget and owes the extra; a later one gets ByteBudget less the debt, but not
// less than need (nor more than ByteBudget), and repays what it leaves unspent.
func (e *Encoder) roundBudget(need int) (budget, debt int) {
	b := e.cfg.ByteBudget
	if e.rounds == 0 {
		extra := int(float64(e.cfg.FirstBudget-1) * float64(b))
		return b + extra, extra
	}
	budget = min(b, max(need, b-e.debt))
	return budget, e.debt - (b - budget)
}

// bits is the code width of low-rank factors and of dense tensors.
func (e *Encoder) bits() (factor, dense int) {
	if e.cfg.NoQuant {
		return bitsRaw, bitsRaw
	}
	return e.cfg.FactorBits, e.cfg.DenseBits
}

// denseBytes is the payload of a dense tensor of n values.
func (e *Encoder) denseBytes(n int) int {
	_, b := e.bits()
	return codeBytes(n, b) + scaleBytes(n, b, e.cfg.BlockSize)
}

// choice describes tensor t for the allocator. The energy of this round's input
// x = delta + β·residual is known (Encoder.check sums it); its spectrum is estimated from the components the last
// round captured (as fractions of that round's energy), continued flat at the last
// component's level until the energy they did not capture runs out. Without history the
// spectrum is taken flat.
func (e *Encoder) choice(t Tensor, energy float64) rankChoice {
	rows, cols := t.Shape[0], t.Shape[1]
	lo, hi := e.rankBounds(rows, cols)
	fb, _ := e.bits()
	pc, ps := colsBytes(rows, 1, fb, e.cfg.BlockSize)
	qc, qs := colsBytes(cols, 1, fb, e.cfg.BlockSize)
	c := rankChoice{lo: lo, hi: hi, step: pc + ps + qc + qs, gain: make([]float64, hi)}
	st := e.state[t.Name]
	d := float64(min(rows, cols))
	var seen []float64
	var prev float64
	if st != nil && st.lr != nil && st.lr.energy > 0 {
		seen, prev = st.lr.gains, st.lr.energy
	}
	left := 1.0
	last := 1 / d
	for k := range c.gain {
		f := last
		if k < len(seen) {
			f = seen[k] / prev
			last = f
		}
		f = min(f, left)
		left -= f
		c.gain[k] = energy * f
	}
	slices.SortFunc(c.gain, func(a, b float64) int { return compareDesc(a, b) })
	return c
}

func compareDesc(a, b float64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

// RatioBudget is the payload budget (Config.ByteBudget) that makes one round's message
// about ratio times smaller than the dense fp32 values of a model with these tensor shapes:
// the fp32 bytes over ratio, less an estimate of the message's framing (the CBOR headers
// and, per tensor, its name, shape, range and rank). It is at least 1.
func RatioBudget(shapes map[string][]int, ratio float64) int {
	values, framing := 0, 16
	for name, shape := range shapes {
		values += numel(shape)
		framing += 32 + len(name)
	}
	return max(1, int(float64(4*values)/ratio)-framing)
}

// MinBudget is the smallest ByteBudget under which cfg (validated) can encode a model with
// these tensor shapes: its dense tensors, and its low-rank ones at their lowest ranks.
func MinBudget(cfg Config, shapes map[string][]int) (int, error) {
	e, err := NewEncoder(cfg)
	if err != nil {
		return 0, err
	}
	fb, _ := e.bits()
	n := 0
	for _, shape := range shapes {
		if !e.isLowRank(shape) {
			n += e.denseBytes(numel(shape))
			continue
		}
		lo, _ := e.rankBounds(shape[0], shape[1])
		pc, ps := colsBytes(shape[0], lo, fb, e.cfg.BlockSize)
		qc, qs := colsBytes(shape[1], lo, fb, e.cfg.BlockSize)
		n += pc + ps + qc + qs
	}
	return n, nil
}
