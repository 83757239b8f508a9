package aggregate

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Source is one contributor's pseudo-gradient, read a range of coordinates at a time.
type Source struct {
	ID     string
	Weight float64
	// Read writes the values [lo, hi) into dst (of length hi - lo). The same range gives the
	// same values every time it is read.
	Read func(lo, hi int, dst []float64) error
}

// StreamBudget is how many values AggregateStream holds of its inputs at once: the
// coordinate ranges it reads are StreamBudget over the number of inputs long (at least
// minChunk).
const StreamBudget = 1 << 18

const minChunk = 256

// AggregateStream is Aggregate over inputs of n values each that it reads a coordinate range
// at a time instead of holding them whole: the same result, bit for bit, and the same
// errors, holding about StreamBudget values of the inputs at once whatever their number.
// Every rule computes each coordinate from that coordinate's values alone, in input order,
// and every sum over coordinates (a distance, a norm) is carried from range to range in
// coordinate order. The rules that need a distance or a norm first read the inputs twice
// (centered_clip twice per iteration more). A Read error ends it with that error.
func AggregateStream(cfg Config, n int, in []Source) ([]float64, error) {
	out, _, err := AggregateStreamDropped(cfg, n, in)
	return out, err
}

// AggregateStreamDropped is AggregateStream that also names the inputs the rule left out
// whole (their IDs, sorted; see the package doc, "Dropped inputs"): only filtered_mean
// leaves inputs out whole, so with every other rule the list is empty.
func AggregateStreamDropped(cfg Config, n int, in []Source) ([]float64, []string, error) {
	if err := cfg.Validate(); err != nil {
		return nil, nil, err
	}
	return aggregateStreamDropped(cfg, n, 0, in)
}

// aggregateStream is AggregateStream with ranges of chunk values (0: from StreamBudget).
func aggregateStream(cfg Config, n, chunk int, in []Source) ([]float64, error) {
	out, _, err := aggregateStreamDropped(cfg, n, chunk, in)
	return out, err
}

// aggregateStreamDropped is AggregateStreamDropped with ranges of chunk values.
func aggregateStreamDropped(cfg Config, n, chunk int, in []Source) ([]float64, []string, error) {
	if err := cfg.Validate(); err != nil {
		return nil, nil, err
	}
	s, err := newStreamer(in, n, chunk)
	if err != nil {
		return nil, nil, err
	}
	var out []float64
	switch cfg.Method {
	case TrimmedMean:
		k := int(math.Floor(cfg.Trim * float64(len(s.src))))
		out, err = s.coordwise(nil, func(xs []Input, _, _ int) []float64 { return trimmedMean(xs, k) })
	case Median:
		out, err = s.median(nil)
	case CenteredClip:
		out, err = s.centeredClip(cfg.Tau, cfg.Iters)
	case NormClip:
		out, err = s.normClip()
	case FilteredMean:
		out, err = s.filteredMean()
	default:
		out, err = s.mean(s.all(), nil)
	}
	if err != nil {
		return nil, nil, err
	}
	for _, v := range out {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, nil, fmt.Errorf("%w: result overflowed", ErrNotFinite)
		}
	}
	return out, s.dropped, nil
}

// streamer reads sorted sources range by range into one buffer per source.
type streamer struct {
	src   []Source
	n     int
	chunk int
	bufs  [][]float64
	// dropped names the inputs the rule left out whole, in ID order.
	dropped []string
}

func newStreamer(in []Source, n, chunk int) (*streamer, error) {
	if len(in) == 0 {
		return nil, ErrEmpty
	}
	if n < 0 {
		return nil, fmt.Errorf("%w: %d values", ErrLength, n)
	}
	src := slices.Clone(in)
	slices.SortFunc(src, func(a, b Source) int { return strings.Compare(a.ID, b.ID) })
	for i, x := range src {
		if i > 0 && x.ID == src[i-1].ID {
			return nil, fmt.Errorf("%w: %q", ErrDuplicate, x.ID)
		}
		if !(x.Weight > 0 && x.Weight <= math.MaxFloat64) {
			return nil, fmt.Errorf("%w: %q weight %v", ErrWeight, x.ID, x.Weight)
		}
	}
	if chunk <= 0 {
		chunk = max(minChunk, StreamBudget/len(src))
	}
	chunk = max(1, min(chunk, n))
	bufs := make([][]float64, len(src))
	for i := range bufs {
		bufs[i] = make([]float64, chunk)
	}
	return &streamer{src: src, n: n, chunk: chunk, bufs: bufs}, nil
}

// all is the index of every source.
func (s *streamer) all() []int {
	idx := make([]int, len(s.src))
	for i := range idx {
		idx[i] = i
	}
	return idx
}

// load reads the range [lo, hi) of the sources idx and returns them as inputs of hi - lo
// values, in the order of idx.
func (s *streamer) load(idx []int, lo, hi int) ([]Input, error) {
	xs := make([]Input, len(idx))
	for k, i := range idx {
		buf := s.bufs[i][:hi-lo]
		if err := s.src[i].Read(lo, hi, buf); err != nil {
			return nil, err
		}
		for _, v := range buf {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("%w: %q", ErrNotFinite, s.src[i].ID)
			}
		}
		xs[k] = Input{ID: s.src[i].ID, Weight: s.src[i].Weight, Vec: buf}
	}
	return xs, nil
}

// coordwise runs f on every range of the sources idx (nil: all) and puts the ranges of its
// results together. f gets the range's inputs and its bounds.
func (s *streamer) coordwise(idx []int, f func(xs []Input, lo, hi int) []float64) ([]float64, error) {
	if idx == nil {
		idx = s.all()
	}
	var out []float64 // made on the first range f gives values for
	for lo := 0; lo < s.n; lo += s.chunk {
		hi := min(lo+s.chunk, s.n)
		xs, err := s.load(idx, lo, hi)
		if err != nil {
			return nil, err
		}
		if r := f(xs, lo, hi); r != nil {
			if out == nil {
				out = make([]float64, s.n)
			}
			copy(out[lo:hi], r)
		}
	}
	if out == nil {
		out = make([]float64, s.n)
	}
	return out, nil
}

// mean is mean over the sources idx, with scale[k] for idx[k] (nil: 1).
func (s *streamer) mean(idx []int, scale []float64) ([]float64, error) {
	return s.coordwise(idx, func(xs []Input, _, _ int) []float64 { return mean(xs, scale) })
}

// median is the coordinate-wise weighted median; with dist not nil it also adds each
// source's squared distance from it, coordinate by coordinate, into dist.
func (s *streamer) median(dist []float64) ([]float64, error) {
	return s.coordwise(nil, func(xs []Input, _, _ int) []float64 {
		m := median(xs)
		if dist != nil {
			addSquares(xs, m, dist)
		}
		return m
	})
}

// addSquares adds Σ_j (x_j - v_j)² of each input, in coordinate order, to sums: l2's sum,
// carried from range to range.
func addSquares(xs []Input, v, sums []float64) {
	for i, x := range xs {
		s := sums[i]
		for j, xv := range x.Vec {
			d := xv - v[j]
			s += float64(d * d)
		}
		sums[i] = s
	}
}

// distances is each source's L2 distance from v.
func (s *streamer) distances(v []float64) ([]float64, error) {
	sums := make([]float64, len(s.src))
	_, err := s.coordwise(nil, func(xs []Input, lo, hi int) []float64 {
		addSquares(xs, v[lo:hi], sums)
		return nil
	})
	for i := range sums {
		sums[i] = math.Sqrt(sums[i])
	}
	return sums, err
}

func (s *streamer) inputs() []Input {
	xs := make([]Input, len(s.src))
	for i, x := range s.src {
		xs[i] = Input{ID: x.ID, Weight: x.Weight}
	}
	return xs
}

func (s *streamer) filteredMean() ([]float64, error) {
	dist := make([]float64, len(s.src))
	if _, err := s.median(dist); err != nil {
		return nil, err
	}
	for i := range dist {
		dist[i] = math.Sqrt(dist[i])
	}
	bound := FilterRadius * weightedMedianOf(s.inputs(), dist)
	var kept []int
	for i := range s.src {
		if dist[i] <= bound {
			kept = append(kept, i)
		} else {
			s.dropped = append(s.dropped, s.src[i].ID)
		}
	}
	return s.mean(kept, nil)
}

func (s *streamer) normClip() ([]float64, error) {
	zero := make([]float64, s.chunk)
	norms := make([]float64, len(s.src))
	if _, err := s.coordwise(nil, func(xs []Input, lo, hi int) []float64 {
		addSquares(xs, zero[:hi-lo], norms)
		return nil
	}); err != nil {
		return nil, err
	}
	for i := range norms {
		norms[i] = math.Sqrt(norms[i])
	}
	c := weightedMedianOf(s.inputs(), norms)
	scale := make([]float64, len(s.src))
	for i, n := range norms {
		scale[i] = 1
		if n > c {
			scale[i] = c / n
		}
	}
	return s.mean(nil, scale)
}

func (s *streamer) centeredClip(tau float64, iters int) ([]float64, error) {
	v, err := s.median(nil)
	if err != nil {
		return nil, err
	}
	xs := s.inputs()
	if tau == 0 {
		dist, err := s.distances(v)
		if err != nil {
			return nil, err
		}
		tau = weightedMedianOf(xs, dist)
	}
	if tau == 0 {
		return v, nil
	}
	var total float64
	for _, x := range xs {
		total += x.Weight
	}
	for it := 0; it < iters; it++ {
		dist, err := s.distances(v)
		if err != nil {
			return nil, err
		}
		if _, err := s.coordwise(nil, func(xs []Input, lo, hi int) []float64 {
			d := make([]float64, hi-lo)
			vr := v[lo:hi]
			for i, x := range xs {
				c := x.Weight / total
				if dist[i] > tau {
					c = float64(c * (tau / dist[i]))
				}
				for j := range d {
					d[j] += float64(c * (x.Vec[j] - vr[j]))
				}
			}
			for j := range vr {
				vr[j] += d[j]
			}
			return nil
		}); err != nil {
			return nil, err
		}
	}
	return v, nil
}
