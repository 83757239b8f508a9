package training

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// Batch is a set of N labelled samples. Token models read Tokens (N×Context ids), feature
// models read X (N×In values). Y holds the N labels (next character or class).
type Batch struct {
	N      int
	Tokens []int
	X      []float64
	Y      []int
}

// Model is a differentiable model over named parameter tensors.
//
// A Model is not safe for concurrent use: it keeps activation buffers between calls.
type Model interface {
	// Params lists the parameters in a fixed order. The slices are the model's own: writing
	// Data changes the model.
	Params() []*Param
	// LossGrad runs forward and backward on b, overwrites every Param.Grad with the gradient
	// of the mean loss and returns that loss.
	LossGrad(b Batch) (float64, error)
	// Eval returns the mean loss and the accuracy on b without touching the gradients.
	Eval(b Batch) (loss, accuracy float64, err error)
}

// ErrBatch reports a batch that does not fit the model.
var ErrBatch = errors.New("training: batch does not fit the model")

// MLP is a stack of Linear layers with ReLU between them and a softmax cross-entropy loss,
// optionally fed by an Embedding of a token window. It implements Model.
type MLP struct {
	emb     *Embedding
	layers  []*Linear
	classes int
	params  []*Param
	acts    [][]float64 // acts[0] is the input, acts[i+1] the output of layer i
	grads   [][]float64
}

var _ Model = (*MLP)(nil)

// CharLMSize sets the shape of the character-level language model.
type CharLMSize struct {
	Vocab, Context, Embed int
	Hidden                []int
}

// NewCharLM builds the character-level MLP language model with weights drawn from rng.
func NewCharLM(s CharLMSize, rng *rand.Rand) (*MLP, error) {
	if s.Vocab < 2 || s.Context < 1 || s.Embed < 1 || len(s.Hidden) < 1 {
		return nil, fmt.Errorf("training: bad char LM size %+v", s)
	}
	m := &MLP{emb: newEmbedding("emb", s.Vocab, s.Embed, s.Context)}
	m.params = append(m.params, m.emb.Table)
	for i := range m.emb.Table.Data {
		m.emb.Table.Data[i] = rng.NormFloat64()
	}
	return m, m.addLayers(s.Context*s.Embed, s.Hidden, s.Vocab, rng)
}

// NewClassifier builds an MLP classifier from in features to classes.
func NewClassifier(in int, hidden []int, classes int, rng *rand.Rand) (*MLP, error) {
	if in < 1 || classes < 2 {
		return nil, fmt.Errorf("training: bad classifier size in=%d classes=%d", in, classes)
	}
	m := &MLP{}
	return m, m.addLayers(in, hidden, classes, rng)
}

func (m *MLP) addLayers(in int, hidden []int, classes int, rng *rand.Rand) error {
	sizes := append(append([]int{in}, hidden...), classes)
	for i := 0; i+1 < len(sizes); i++ {
		if sizes[i+1] < 1 {
			return fmt.Errorf("training: layer %d has size %d", i, sizes[i+1])
		}
		l := newLinear(fmt.Sprintf("l%d", i), sizes[i], sizes[i+1])
		std := math.Sqrt(2 / float64(sizes[i])) // He initialisation for ReLU
		if i+2 == len(sizes) {
			std = 0.5 / math.Sqrt(float64(sizes[i]))
		}
		for j := range l.W.Data {
			l.W.Data[j] = std * rng.NormFloat64()
		}
		m.layers = append(m.layers, l)
		m.params = append(m.params, l.W, l.B)
	}
	m.classes = classes
	m.acts = make([][]float64, len(m.layers)+1)
	m.grads = make([][]float64, len(m.layers)+1)
	return nil
}

// Params implements Model.
func (m *MLP) Params() []*Param { return m.params }

func (m *MLP) inDim() int {
	if m.emb != nil {
		return m.emb.Context * m.emb.Dim
	}
	return m.layers[0].In
}

func (m *MLP) check(b Batch) error {
	if b.N < 1 || len(b.Y) != b.N {
		return fmt.Errorf("%w: %d samples, %d labels", ErrBatch, b.N, len(b.Y))
	}
	for _, y := range b.Y {
		if y < 0 || y >= m.classes {
			return fmt.Errorf("%w: label %d outside [0,%d)", ErrBatch, y, m.classes)
		}
	}
	if m.emb == nil {
		if len(b.X) != b.N*m.inDim() {
			return fmt.Errorf("%w: %d features, want %d", ErrBatch, len(b.X), b.N*m.inDim())
		}
		return nil
	}
	if len(b.Tokens) != b.N*m.emb.Context {
		return fmt.Errorf("%w: %d tokens, want %d", ErrBatch, len(b.Tokens), b.N*m.emb.Context)
	}
	for _, t := range b.Tokens {
		if t < 0 || t >= m.emb.Vocab {
			return fmt.Errorf("%w: token %d outside [0,%d)", ErrBatch, t, m.emb.Vocab)
		}
	}
	return nil
}

// forward fills the activations and returns the logits.
func (m *MLP) forward(b Batch) []float64 {
	n := b.N
	if m.emb != nil {
		m.acts[0] = grow(m.acts[0], n*m.inDim())
		m.emb.forward(b.Tokens, n, m.acts[0])
	} else {
		m.acts[0] = b.X
	}
	for i, l := range m.layers {
		m.acts[i+1] = grow(m.acts[i+1], n*l.Out)
		l.forward(m.acts[i], n, m.acts[i+1])
		if i+1 < len(m.layers) {
			reluForward(m.acts[i+1])
		}
	}
	return m.acts[len(m.layers)]
}

// LossGrad implements Model.
func (m *MLP) LossGrad(b Batch) (float64, error) {
	if err := m.check(b); err != nil {
		return 0, err
	}
	for _, p := range m.params {
		if p.Grad == nil {
			p.Grad = make([]float64, len(p.Data))
		}
	}
	n, L := b.N, len(m.layers)
	logits := m.forward(b)
	m.grads[L] = grow(m.grads[L], n*m.classes)
	loss, _ := softmaxXent(logits, b.Y, n, m.classes, m.grads[L])
	for i := L - 1; i >= 0; i-- {
		l := m.layers[i]
		var dx []float64
		if i > 0 || m.emb != nil {
			m.grads[i] = grow(m.grads[i], n*l.In)
			dx = m.grads[i]
		}
		l.backward(m.acts[i], m.grads[i+1], n, dx)
		if i > 0 {
			reluBackward(m.acts[i], m.grads[i])
		}
	}
	if m.emb != nil {
		m.emb.backward(b.Tokens, n, m.grads[0])
	}
	return loss, nil
}

// evalRows is how many samples Eval runs forward at once: its activations are those of
// evalRows samples, however large the batch.
const evalRows = 64

// Eval implements Model. It goes through b evalRows samples at a time, adding up the
// losses in sample order as one pass over the whole batch would.
func (m *MLP) Eval(b Batch) (float64, float64, error) {
	if err := m.check(b); err != nil {
		return 0, 0, err
	}
	var sum float64
	correct := 0
	for lo := 0; lo < b.N; lo += evalRows {
		sub := b.rows(lo, min(lo+evalRows, b.N))
		var c int
		sum, c = xentSum(m.forward(sub), sub.Y, sub.N, m.classes, nil, sum)
		correct += c
	}
	return sum / float64(b.N), float64(correct) / float64(b.N), nil
}

// rows is the samples [lo, hi) of b, sharing its slices.
func (b Batch) rows(lo, hi int) Batch {
	out := Batch{N: hi - lo, Y: b.Y[lo:hi]}
	if b.Tokens != nil {
		k := len(b.Tokens) / b.N
		out.Tokens = b.Tokens[lo*k : hi*k]
	}
	if b.X != nil {
		k := len(b.X) / b.N
		out.X = b.X[lo*k : hi*k]
	}
	return out
}
