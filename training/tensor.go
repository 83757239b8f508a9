package training

import (
	"errors"
	"fmt"
)

// Tensor is a named dense tensor in row-major order. It has the same layout as
// compress.Tensor, so the two convert with a plain type conversion.
type Tensor struct {
	Name  string
	Shape []int
	Data  []float64
}

// Param is one trainable parameter tensor of a model with its gradient.
// Data and Grad have the same length, the product of Shape; a model that only evaluates
// may have its Grad set to nil, and LossGrad makes it again.
type Param struct {
	Name  string
	Shape []int
	Data  []float64
	Grad  []float64
}

func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

func newParam(name string, shape ...int) *Param {
	n := numel(shape)
	return &Param{Name: name, Shape: shape, Data: make([]float64, n), Grad: make([]float64, n)}
}

// ErrShape reports tensors whose names, shapes or sizes do not match a model's parameters.
var ErrShape = errors.New("training: tensor shape mismatch")

// NumParams is the total number of scalars in ps.
func NumParams(ps []*Param) int {
	n := 0
	for _, p := range ps {
		n += len(p.Data)
	}
	return n
}

// Snapshot copies the parameter values of ps into new tensors (sharing nothing).
func Snapshot(ps []*Param) []Tensor {
	out := make([]Tensor, len(ps))
	for i, p := range ps {
		out[i] = Tensor{Name: p.Name, Shape: append([]int(nil), p.Shape...), Data: append([]float64(nil), p.Data...)}
	}
	return out
}

// Load copies ts into the parameter values of ps. Names, shapes and order must match.
func Load(ps []*Param, ts []Tensor) error {
	if err := CheckShapes(ps, ts); err != nil {
		return err
	}
	for i, p := range ps {
		copy(p.Data, ts[i].Data)
	}
	return nil
}

// Adopt makes the values of ts the parameter values of ps, without copying them: the caller
// hands them over and must not use them while the model does. Names, shapes and order must
// match.
// A parameter's Data may be nil before (a model that holds none between uses).
func Adopt(ps []*Param, ts []Tensor) error {
	if len(ts) != len(ps) {
		return fmt.Errorf("%w: %d tensors, model has %d", ErrShape, len(ts), len(ps))
	}
	for i, p := range ps {
		t := ts[i]
		if n := numel(p.Shape); t.Name != p.Name || !sameShape(t.Shape, p.Shape) || len(t.Data) != n {
			return fmt.Errorf("%w: tensor %d is %q %v (%d values), want %q %v", ErrShape, i, t.Name, t.Shape, len(t.Data), p.Name, p.Shape)
		}
	}
	for i, p := range ps {
		p.Data = ts[i].Data
	}
	return nil
}

// Views returns tensors over the parameter values of ps, sharing them (a model writes
// them as it trains: Adopt other values before it does, or take a Snapshot).
func Views(ps []*Param) []Tensor {
	out := make([]Tensor, len(ps))
	for i, p := range ps {
		out[i] = Tensor{Name: p.Name, Shape: append([]int(nil), p.Shape...), Data: p.Data}
	}
	return out
}

// CheckShapes reports whether ts has exactly the names, shapes and sizes of ps, in order.
func CheckShapes(ps []*Param, ts []Tensor) error {
	if len(ts) != len(ps) {
		return fmt.Errorf("%w: %d tensors, model has %d", ErrShape, len(ts), len(ps))
	}
	for i, p := range ps {
		t := ts[i]
		if t.Name != p.Name || !sameShape(t.Shape, p.Shape) || len(t.Data) != len(p.Data) {
			return fmt.Errorf("%w: tensor %d is %q %v (%d values), want %q %v", ErrShape, i, t.Name, t.Shape, len(t.Data), p.Name, p.Shape)
		}
	}
	return nil
}

func sameShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Flatten concatenates the values of ts in order.
func Flatten(ts []Tensor) []float64 {
	n := 0
	for _, t := range ts {
		n += len(t.Data)
	}
	out := make([]float64, 0, n)
	for _, t := range ts {
		out = append(out, t.Data...)
	}
	return out
}

// Unflatten cuts v into tensors with the names and shapes of like. It fails when the total
// size differs.
func Unflatten(v []float64, like []Tensor) ([]Tensor, error) {
	n := 0
	for _, t := range like {
		n += len(t.Data)
	}
	if n != len(v) {
		return nil, fmt.Errorf("%w: %d values for tensors of %d", ErrShape, len(v), n)
	}
	out := make([]Tensor, len(like))
	off := 0
	for i, t := range like {
		out[i] = Tensor{Name: t.Name, Shape: append([]int(nil), t.Shape...), Data: append([]float64(nil), v[off:off+len(t.Data)]...)}
		off += len(t.Data)
	}
	return out, nil
}

// AddTo adds src to dst in place, tensor by tensor (a move of local work, such as a
// merging close's round.Ready.Shift); names and sizes must match, else nothing changes.
func AddTo(dst, src []Tensor) error {
	if len(dst) != len(src) {
		return fmt.Errorf("%w: adding %d tensors to %d", ErrShape, len(src), len(dst))
	}
	for i, d := range dst {
		if d.Name != src[i].Name || len(d.Data) != len(src[i].Data) {
			return fmt.Errorf("%w: adding %q (%d values) to %q (%d)", ErrShape, src[i].Name, len(src[i].Data), d.Name, len(d.Data))
		}
	}
	for i, d := range dst {
		for j, v := range src[i].Data {
			d.Data[j] += v
		}
	}
	return nil
}

// PseudoGradient returns global - local, tensor by tensor: the DiLoCo pseudo-gradient of a
// local phase that started from global.
func PseudoGradient(global, local []Tensor) ([]Tensor, error) {
	if len(global) != len(local) {
		return nil, fmt.Errorf("%w: %d global tensors, %d local", ErrShape, len(global), len(local))
	}
	out := make([]Tensor, len(global))
	for i, g := range global {
		l := local[i]
		if g.Name != l.Name || !sameShape(g.Shape, l.Shape) || len(g.Data) != len(l.Data) {
			return nil, fmt.Errorf("%w: %q against %q", ErrShape, g.Name, l.Name)
		}
		d := make([]float64, len(g.Data))
		for j := range d {
			d[j] = g.Data[j] - l.Data[j]
		}
		out[i] = Tensor{Name: g.Name, Shape: append([]int(nil), g.Shape...), Data: d}
	}
	return out, nil
}
