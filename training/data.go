package training

import (
	"errors"
	"fmt"
	"math/rand/v2"
)

// Dataset is an indexed set of labelled samples.
type Dataset interface {
	// Len is the number of samples.
	Len() int
	// Batch gathers the samples at idx (each in [0, Len())) into a new Batch.
	Batch(idx []int) Batch
}

// ErrData reports data that cannot be used: too small, malformed or out of range.
var ErrData = errors.New("training: bad data")

// SliceChunk is how many consecutive samples NodeSlice and PeerSlice deal out at a time.
const SliceChunk = 64

// NodeSlice deals the samples [0, n) to nodes and returns node's share. Samples go out in
// chunks of consecutive indices; the chunks are shuffled by seed and dealt round-robin, so
// the result is a deterministic function of (n, seed, node, nodes) and the shares of
// different nodes are disjoint and together cover every sample.
func NodeSlice(n int, seed uint64, node, nodes int) ([]int, error) {
	if nodes < 1 || node < 0 || node >= nodes {
		return nil, fmt.Errorf("%w: node %d of %d", ErrData, node, nodes)
	}
	chunks := (n + SliceChunk - 1) / SliceChunk
	if chunks < nodes {
		return nil, fmt.Errorf("%w: %d samples are too few for %d nodes", ErrData, n, nodes)
	}
	perm := rand.New(rand.NewPCG(seed, 0x6e6f6465)).Perm(chunks)
	var out []int
	for j := node; j < chunks; j += nodes {
		lo := perm[j] * SliceChunk
		for i := lo; i < min(lo+SliceChunk, n); i++ {
			out = append(out, i)
		}
	}
	return out, nil
}

// Batcher draws batches from a subset of a Dataset: each epoch visits every sample of the
// subset once, in an order shuffled by its own seeded generator.
type Batcher struct {
	data  Dataset
	idx   []int
	size  int
	pos   int
	rng   *rand.Rand
	batch []int
	drawn uint64 // samples drawn so far
}

// NewBatcher returns a Batcher of batches of size samples drawn from idx (which it copies).
func NewBatcher(d Dataset, idx []int, size int, seed uint64) (*Batcher, error) {
	if size < 1 || len(idx) < size {
		return nil, fmt.Errorf("%w: batch of %d from %d samples", ErrData, size, len(idx))
	}
	for _, i := range idx {
		if i < 0 || i >= d.Len() {
			return nil, fmt.Errorf("%w: sample %d outside [0,%d)", ErrData, i, d.Len())
		}
	}
	b := &Batcher{data: d, idx: append([]int(nil), idx...), size: size, rng: rand.New(rand.NewPCG(seed, 0x62617463))}
	b.shuffle()
	return b, nil
}

func (b *Batcher) shuffle() {
	b.rng.Shuffle(len(b.idx), func(i, j int) { b.idx[i], b.idx[j] = b.idx[j], b.idx[i] })
	b.pos = 0
}

// Next returns the next batch.
func (b *Batcher) Next() Batch {
	b.batch = b.batch[:0]
	for len(b.batch) < b.size {
		if b.pos == len(b.idx) {
			b.shuffle()
		}
		b.batch = append(b.batch, b.idx[b.pos])
		b.pos++
		b.drawn++
	}
	return b.data.Batch(b.batch)
}

// Range returns the indices [lo, hi): a convenience for fixed evaluation subsets.
func Range(lo, hi int) []int {
	out := make([]int, 0, max(hi-lo, 0))
	for i := lo; i < hi; i++ {
		out = append(out, i)
	}
	return out
}

// Synthetic is a teacher task: Gaussian features labelled by the arg max of a fixed random
// linear map. It is small and learnable, for fast tests.
type Synthetic struct {
	Dim, Classes int
	x            []float64
	y            []int
}

var _ Dataset = (*Synthetic)(nil)

// NewSynthetic draws n samples of dim features and classes labels from seed.
func NewSynthetic(n, dim, classes int, seed uint64) (*Synthetic, error) {
	if n < 1 || dim < 1 || classes < 2 {
		return nil, fmt.Errorf("%w: synthetic n=%d dim=%d classes=%d", ErrData, n, dim, classes)
	}
	rng := rand.New(rand.NewPCG(seed, 0x73796e74))
	teacher := make([]float64, dim*classes)
	for i := range teacher {
		teacher[i] = rng.NormFloat64()
	}
	s := &Synthetic{Dim: dim, Classes: classes, x: make([]float64, n*dim), y: make([]int, n)}
	for i := 0; i < n; i++ {
		row := s.x[i*dim : (i+1)*dim]
		for j := range row {
			row[j] = rng.NormFloat64()
		}
		best, arg := 0.0, 0
		for c := 0; c < classes; c++ {
			v := 0.0
			for j, xv := range row {
				v += xv * teacher[j*classes+c]
			}
			if c == 0 || v > best {
				best, arg = v, c
			}
		}
		s.y[i] = arg
	}
	return s, nil
}

// Len implements Dataset.
func (s *Synthetic) Len() int { return len(s.y) }

// Batch implements Dataset.
func (s *Synthetic) Batch(idx []int) Batch {
	b := Batch{N: len(idx), X: make([]float64, 0, len(idx)*s.Dim), Y: make([]int, len(idx))}
	for k, i := range idx {
		b.X = append(b.X, s.x[i*s.Dim:(i+1)*s.Dim]...)
		b.Y[k] = s.y[i]
	}
	return b
}
