package training

import (
	"fmt"
	"math"
)

// Optimizer updates parameters from their gradients.
type Optimizer interface {
	// Step applies one update with learning rate lr.
	Step(ps []*Param, lr float64)
}

// AdamW is Adam with decoupled weight decay (Loshchilov & Hutter). Weight decay applies to
// matrices only (parameters with two or more dimensions), not to biases. The moments are
// kept in float32, half the memory of two more copies of the parameters; each step
// computes them in float64 and updates the parameters with those values before rounding
// them to keep.
type AdamW struct {
	Beta1, Beta2, Eps, WeightDecay float64

	t    int
	m, v [][]float32
}

var _ Optimizer = (*AdamW)(nil)

// NewAdamW returns AdamW with β1 0.9, β2 0.95, ε 1e-8 and the given weight decay.
func NewAdamW(weightDecay float64) *AdamW {
	return &AdamW{Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: weightDecay}
}

// Step implements Optimizer.
func (a *AdamW) Step(ps []*Param, lr float64) {
	if a.m == nil {
		a.m, a.v = make([][]float32, len(ps)), make([][]float32, len(ps))
		for i, p := range ps {
			a.m[i], a.v[i] = make([]float32, len(p.Data)), make([]float32, len(p.Data))
		}
	}
	a.t++
	c1 := 1 - math.Pow(a.Beta1, float64(a.t))
	c2 := 1 - math.Pow(a.Beta2, float64(a.t))
	for i, p := range ps {
		m, v := a.m[i], a.v[i]
		decay := 0.0
		if len(p.Shape) >= 2 {
			decay = float64(lr * a.WeightDecay)
		}
		for j, g := range p.Grad {
			mj := float64(a.Beta1*float64(m[j])) + float64((1-a.Beta1)*g)
			vj := float64(a.Beta2*float64(v[j])) + float64((1-a.Beta2)*float64(g*g))
			m[j], v[j] = float32(mj), float32(vj)
			upd := (mj / c1) / (math.Sqrt(vj/c2) + a.Eps)
			p.Data[j] = p.Data[j] - float64(decay*p.Data[j]) - float64(lr*upd)
		}
	}
}

// SGD is plain gradient descent: θ -= lr·g.
type SGD struct{}

var _ Optimizer = SGD{}

// Step implements Optimizer.
func (SGD) Step(ps []*Param, lr float64) {
	for _, p := range ps {
		for j, g := range p.Grad {
			p.Data[j] -= float64(lr * g)
		}
	}
}

// ClipGradNorm scales all gradients down so that their joint L2 norm is at most maxNorm
// (no-op when maxNorm <= 0 or the norm is already small enough). It returns the norm
// before clipping.
func ClipGradNorm(ps []*Param, maxNorm float64) float64 {
	sum := 0.0
	for _, p := range ps {
		for _, g := range p.Grad {
			sum += float64(g * g)
		}
	}
	norm := math.Sqrt(sum)
	if maxNorm > 0 && norm > maxNorm {
		s := maxNorm / norm
		for _, p := range ps {
			for j := range p.Grad {
				p.Grad[j] *= s
			}
		}
	}
	return norm
}

// Schedule is a learning rate with linear warmup to Peak over Warmup steps, then a cosine
// decay to Min at step Total; Min after that.
type Schedule struct {
	Peak, Min     float64
	Warmup, Total int
}

// At is the learning rate of step (counted from 0).
func (s Schedule) At(step int) float64 {
	if step < s.Warmup {
		return s.Peak * float64(step+1) / float64(s.Warmup)
	}
	if step >= s.Total || s.Total <= s.Warmup {
		return s.Min
	}
	p := float64(step-s.Warmup) / float64(s.Total-s.Warmup)
	return s.Min + 0.5*(s.Peak-s.Min)*(1+math.Cos(math.Pi*p))
}

// Nesterov is SGD with Nesterov momentum as the DiLoCo outer optimizer, in the form of
// PyTorch's SGD(nesterov=True): v ← μv + g; θ ← θ − lr·(g + μv).
// Every product is rounded before it is added, so results are bit-reproducible on every
// architecture. With Momentum 0 it is plain SGD, θ ← θ − lr·g, and keeps no buffer (the
// buffer would only repeat the last g: a model's worth of memory in every state kept,
// and of bytes in every checkpoint), unless KeepLast asks it to keep the last g there.
type Nesterov struct {
	LR, Momentum float64
	// KeepLast keeps the last g as the buffer when Momentum is 0 (v ← 0·v + g, as with
	// any momentum), for a caller that reads it (round's shared bases).
	KeepLast bool
	buf      []float64
}

// Step applies the pseudo-gradient g to theta in place.
func (n *Nesterov) Step(theta, g []float64) error {
	if len(theta) != len(g) {
		return fmt.Errorf("%w: %d parameters, %d gradient values", ErrShape, len(theta), len(g))
	}
	return n.StepAt(theta, 0, g)
}

// StepAt applies g to theta[lo:lo+len(g)] in place, with the momentum of those
// coordinates: Step over the whole vector is StepAt over its ranges in any order, to the
// bit, so a caller can step each range of a pseudo-gradient as it is made.
func (n *Nesterov) StepAt(theta []float64, lo int, g []float64) error {
	if lo < 0 || lo > len(theta) || len(g) > len(theta)-lo {
		return fmt.Errorf("%w: %d gradient values at %d of %d parameters", ErrShape, len(g), lo, len(theta))
	}
	th := theta[lo : lo+len(g)]
	if n.Momentum == 0 && !n.KeepLast {
		if n.buf != nil {
			return fmt.Errorf("%w: a momentum buffer for plain SGD (momentum 0)", ErrShape)
		}
		for i, gi := range g {
			th[i] -= float64(n.LR * gi)
		}
		return nil
	}
	if n.buf == nil {
		n.buf = make([]float64, len(theta))
	}
	if len(n.buf) != len(theta) {
		return fmt.Errorf("%w: momentum of %d values for %d parameters", ErrShape, len(n.buf), len(theta))
	}
	buf := n.buf[lo : lo+len(g)]
	for i, gi := range g {
		v := float64(n.Momentum*buf[i]) + gi
		buf[i] = v
		d := gi + float64(n.Momentum*v)
		th[i] -= float64(n.LR * d)
	}
	return nil
}

// MomentumBuffer returns the momentum buffer (nil before the first step). The slice is the
// optimizer's own.
func (n *Nesterov) MomentumBuffer() []float64 { return n.buf }

// SetMomentumBuffer restores a momentum buffer, e.g. from a checkpoint. It copies buf.
func (n *Nesterov) SetMomentumBuffer(buf []float64) { n.buf = append([]float64(nil), buf...) }

// Inner runs the inner loop of one node: H steps of its optimizer on its model, with
// gradient clipping and a learning rate schedule that continues across rounds.
type Inner struct {
	Model    Model
	Opt      Optimizer
	Schedule Schedule
	Clip     float64

	step int
}

// Run takes h steps on batches from b and returns the mean training loss.
func (in *Inner) Run(b *Batcher, h int) (float64, error) {
	total := 0.0
	for i := 0; i < h; i++ {
		loss, err := in.Model.LossGrad(b.Next())
		if err != nil {
			return 0, err
		}
		ps := in.Model.Params()
		ClipGradNorm(ps, in.Clip)
		in.Opt.Step(ps, in.Schedule.At(in.step))
		in.step++
		total += loss
	}
	return total / float64(h), nil
}

// Steps is the number of inner steps taken so far.
func (in *Inner) Steps() int { return in.step }
