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

// StreamBudget is how many values AggregateStreamTo holds of its inputs at once: the
// coordinate ranges it reads are StreamBudget over the number of inputs long (at least
// minChunk).
const StreamBudget = 1 << 18

const minChunk = 256

// AggregateStreamTo is Aggregate over inputs of n values each that it reads a coordinate
// range at a time instead of holding them whole, and whose result it hands to sink a
// coordinate range at a time, in coordinate order: lo is the range's first coordinate, g
// its values (sink must not keep g). The ranges put together are Aggregate's result, bit
// for bit, with the same errors, holding about StreamBudget values of the inputs at once
// whatever their number; the rules whose final pass is coordinate-wise (all but
// centered_clip) never hold the result whole. Every rule computes each coordinate from
// that coordinate's values alone, in input order, and every sum over coordinates (a
// distance, a norm) is carried from range to range in coordinate order. The rules that
// need a distance or a norm first read the inputs twice (centered_clip twice per
// iteration more). A Read error ends it with that error. Each range is checked finite
// before it is handed over, so an error may come after some ranges were: the caller
// writes them where it can drop them (the round's close steps a copy of θ). It returns the
// inputs the rule left out whole (their IDs, sorted; see the package doc, "Dropped
// inputs"): only filtered_mean leaves inputs out whole.
func AggregateStreamTo(cfg Config, n int, in []Source, sink func(lo int, g []float64) error) ([]string, error) {
	return aggregateStreamTo(cfg, n, 0, in, sink)
}

// aggregateStreamTo is AggregateStreamTo with ranges of chunk values (0: from StreamBudget).
func aggregateStreamTo(cfg Config, n, chunk int, in []Source, sink func(lo int, g []float64) error) ([]string, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s, err := newStreamer(in, n, chunk)
	if err != nil {
		return nil, err
	}
	s.sink = sink
	if _, err := s.aggregate(cfg); err != nil {
		return nil, err
	}
	return s.dropped, nil
}

// aggregate runs cfg's rule: it returns the result, or with a sink set hands it over a
// range at a time (final) and returns nil.
func (s *streamer) aggregate(cfg Config) ([]float64, error) {
	var out []float64
	var err error
	switch cfg.Method {
	case TrimmedMean:
		k := int(math.Floor(cfg.Trim * float64(len(s.src))))
		out, err = s.final(nil, func(xs []Input, lo, hi int) []float64 { return trimmedMeanInto(s.scratch[:hi-lo], xs, k) })
	case Median:
		out, err = s.final(nil, func(xs []Input, lo, hi int) []float64 { return medianInto(s.scratch[:hi-lo], xs) })
	case CenteredClip:
		if out, err = s.centeredClip(cfg.Tau, cfg.Iters); err == nil && s.sink != nil {
			err = s.hand(0, out)
			out = nil
		}
	case NormClip:
		out, err = s.normClip()
	case FilteredMean:
		out, err = s.filteredMean()
	default:
		out, err = s.mean(s.all(), nil)
	}
	if err != nil {
		return nil, err
	}
	if err := finite(out); err != nil {
		return nil, err
	}
	return out, nil
}

// finite refuses a result with a value that is not finite.
func finite(v []float64) error {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("%w: result overflowed", ErrNotFinite)
		}
	}
	return nil
}

// hand checks a range of the result and hands it to the sink.
func (s *streamer) hand(lo int, g []float64) error {
	if err := finite(g); err != nil {
		return err
	}
	return s.sink(lo, g)
}

// final is the rule's last pass: coordwise, or with a sink set each range handed over as
// it is made (and nil returned).
func (s *streamer) final(idx []int, f func(xs []Input, lo, hi int) []float64) ([]float64, error) {
	if s.sink == nil {
		return s.coordwise(idx, f)
	}
	if idx == nil {
		idx = s.all()
	}
	for lo := 0; lo < s.n; lo += s.chunk {
		hi := min(lo+s.chunk, s.n)
		xs, err := s.load(idx, lo, hi)
		if err != nil {
			return nil, err
		}
		if err := s.hand(lo, f(xs, lo, hi)); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// streamer reads sorted sources range by range into one buffer per source.
type streamer struct {
	src   []Source
	n     int
	chunk int
	bufs  [][]float64
	// dropped names the inputs the rule left out whole, in ID order.
	dropped []string
	// sink, if set, takes the result a range at a time (AggregateStreamTo).
	sink func(lo int, g []float64) error
	// scratch holds a range of a pass's result: coordwise copies it out, a sink must not
	// keep it.
	scratch []float64
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
	return &streamer{src: src, n: n, chunk: chunk, bufs: bufs, scratch: make([]float64, chunk)}, nil
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
// results together (nil if f gives none: a pass that only sums allocates no result). f
// gets the range's inputs and its bounds.
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
	if out == nil && s.n == 0 {
		out = []float64{}
	}
	return out, nil // nil when f gave nothing: a pass that only sums
}

// mean is mean over the sources idx, with scale[k] for idx[k] (nil: 1).
func (s *streamer) mean(idx []int, scale []float64) ([]float64, error) {
	return s.final(idx, func(xs []Input, lo, hi int) []float64 { return meanInto(s.scratch[:hi-lo], xs, scale) })
}

// median is the coordinate-wise weighted median, whole.
func (s *streamer) median() ([]float64, error) {
	return s.coordwise(nil, func(xs []Input, _, _ int) []float64 { return medianInto(s.scratch[:len(xs[0].Vec)], xs) })
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
	_, err := s.coordwise(nil, func(xs []Input, _, _ int) []float64 { // the median is not kept
		addSquares(xs, medianInto(s.scratch[:len(xs[0].Vec)], xs), dist)
		return nil
	})
	if err != nil {
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
	v, err := s.median()
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
