package training

import (
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// grow returns a slice of length n, reusing buf when it is large enough.
func grow(buf []float64, n int) []float64 {
	if cap(buf) < n {
		return make([]float64, n)
	}
	return buf[:n]
}

func general(rows, cols int, data []float64) blas64.General {
	return blas64.General{Rows: rows, Cols: cols, Stride: cols, Data: data}
}

// Linear is y = x·W + b with W of shape [in, out] and b of shape [out].
type Linear struct {
	In, Out int
	W, B    *Param
}

func newLinear(name string, in, out int) *Linear {
	return &Linear{In: in, Out: out, W: newParam(name+".w", in, out), B: newParam(name+".b", out)}
}

// forward writes the n×Out result for the n×In input x into y.
func (l *Linear) forward(x []float64, n int, y []float64) {
	for i := 0; i < n; i++ {
		copy(y[i*l.Out:(i+1)*l.Out], l.B.Data)
	}
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, general(n, l.In, x), general(l.In, l.Out, l.W.Data), 1, general(n, l.Out, y))
}

// backward sets the gradients of W and b from the input x and the output gradient dy, and
// writes the input gradient into dx unless dx is nil.
func (l *Linear) backward(x, dy []float64, n int, dx []float64) {
	blas64.Gemm(blas.Trans, blas.NoTrans, 1, general(n, l.In, x), general(n, l.Out, dy), 0, general(l.In, l.Out, l.W.Grad))
	clear(l.B.Grad)
	for i := 0; i < n; i++ {
		row := dy[i*l.Out : (i+1)*l.Out]
		for j, v := range row {
			l.B.Grad[j] += v
		}
	}
	if dx != nil {
		blas64.Gemm(blas.NoTrans, blas.Trans, 1, general(n, l.Out, dy), general(l.In, l.Out, l.W.Data), 0, general(n, l.In, dx))
	}
}

// Embedding maps token ids to rows of a [Vocab, Dim] table; a window of Context tokens
// becomes one concatenated row of Context·Dim values.
type Embedding struct {
	Vocab, Dim, Context int
	Table               *Param
}

func newEmbedding(name string, vocab, dim, context int) *Embedding {
	return &Embedding{Vocab: vocab, Dim: dim, Context: context, Table: newParam(name, vocab, dim)}
}

// forward writes n rows of Context·Dim values for the n×Context token ids.
func (e *Embedding) forward(tokens []int, n int, y []float64) {
	for i := 0; i < n*e.Context; i++ {
		t := tokens[i]
		copy(y[i*e.Dim:(i+1)*e.Dim], e.Table.Data[t*e.Dim:(t+1)*e.Dim])
	}
}

// backward sets the table gradient from the output gradient dy.
func (e *Embedding) backward(tokens []int, n int, dy []float64) {
	clear(e.Table.Grad)
	for i := 0; i < n*e.Context; i++ {
		t := tokens[i]
		g := e.Table.Grad[t*e.Dim : (t+1)*e.Dim]
		for j, v := range dy[i*e.Dim : (i+1)*e.Dim] {
			g[j] += v
		}
	}
}

// reluForward applies max(0, x) in place.
func reluForward(x []float64) {
	for i, v := range x {
		if v < 0 {
			x[i] = 0
		}
	}
}

// reluBackward zeroes dy where the activation y was not positive.
func reluBackward(y, dy []float64) {
	for i, v := range y {
		if v <= 0 {
			dy[i] = 0
		}
	}
}

// softmaxXent returns the mean cross-entropy of the n×c logits against labels and the
// number of rows whose arg max is the label. When dlogits is not nil it receives the
// gradient of the mean loss.
func softmaxXent(logits []float64, labels []int, n, c int, dlogits []float64) (loss float64, correct int) {
	sum, correct := xentSum(logits, labels, n, c, dlogits, 0)
	return sum / float64(n), correct
}

// xentSum is softmaxXent's sum of the rows' losses, added in row order to loss, and its
// count of correct rows; dlogits, when not nil, is the gradient of the sum over n.
func xentSum(logits []float64, labels []int, n, c int, dlogits []float64, loss float64) (float64, int) {
	correct := 0
	for i := 0; i < n; i++ {
		row := logits[i*c : (i+1)*c]
		mx, arg := row[0], 0
		for j, v := range row {
			if v > mx {
				mx, arg = v, j
			}
		}
		if arg == labels[i] {
			correct++
		}
		sum := 0.0
		for _, v := range row {
			sum += math.Exp(v - mx)
		}
		lse := mx + math.Log(sum)
		loss += lse - row[labels[i]]
		if dlogits != nil {
			d := dlogits[i*c : (i+1)*c]
			for j, v := range row {
				d[j] = math.Exp(v-lse) / float64(n)
			}
			d[labels[i]] -= 1 / float64(n)
		}
	}
	return loss, correct
}
