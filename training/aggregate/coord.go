package aggregate

import "math"

// column holds one coordinate's values across inputs, sorted by value with ties broken by
// input position (inputs are in ID order), so every order of the inputs sorts the same way.
type column struct {
	v   []float64
	w   []float64
	idx []int
}

func newColumn(n int) *column {
	return &column{v: make([]float64, n), w: make([]float64, n), idx: make([]int, n)}
}

// load fills the column with coordinate j and sorts it (insertion sort: n is small, and it
// allocates nothing).
func (c *column) load(xs []Input, j int) {
	for i, x := range xs {
		v, w, k := x.Vec[j], x.Weight, i
		p := i
		for p > 0 && (c.v[p-1] > v || c.v[p-1] == v && c.idx[p-1] > k) {
			c.v[p], c.w[p], c.idx[p] = c.v[p-1], c.w[p-1], c.idx[p-1]
			p--
		}
		c.v[p], c.w[p], c.idx[p] = v, w, k
	}
}

// weightedMedian of the sorted column (see the package doc).
func (c *column) weightedMedian() float64 {
	var total float64
	for _, w := range c.w {
		total += w
	}
	half := total / 2
	var cum float64
	for k, w := range c.w {
		cum += w
		if cum > half || k == len(c.w)-1 {
			return c.v[k]
		}
		if cum == half { // each half rounded: x/2 is x*0.5, which would fuse into the add
			return float64(c.v[k]/2) + float64(c.v[k+1]/2)
		}
	}
	return math.NaN() // unreachable: the loop returns at the last element
}

func median(xs []Input) []float64 { return medianInto(make([]float64, len(xs[0].Vec)), xs) }

// medianInto is median written into out, of the inputs' length, which it returns.
func medianInto(out []float64, xs []Input) []float64 {
	c := newColumn(len(xs))
	for j := range out {
		c.load(xs, j)
		out[j] = c.weightedMedian()
	}
	return out
}

func trimmedMean(xs []Input, k int) []float64 {
	return trimmedMeanInto(make([]float64, len(xs[0].Vec)), xs, k)
}

// trimmedMeanInto is trimmedMean written into out, of the inputs' length, which it returns.
func trimmedMeanInto(out []float64, xs []Input, k int) []float64 {
	c := newColumn(len(xs))
	for j := range out {
		c.load(xs, j)
		var s, w float64
		for i := k; i < len(xs)-k; i++ {
			s += float64(c.w[i] * c.v[i])
			w += c.w[i]
		}
		out[j] = s / w
	}
	return out
}

// weightedMedianOf returns the weighted median of vals (one per input, in input order).
func weightedMedianOf(xs []Input, vals []float64) float64 {
	one := make([]Input, len(xs))
	for i, x := range xs {
		one[i] = Input{ID: x.ID, Weight: x.Weight, Vec: vals[i : i+1]}
	}
	c := newColumn(len(xs))
	c.load(one, 0)
	return c.weightedMedian()
}

// distances writes into dist the L2 distance of each input from v, using d (of v's length)
// as scratch.
func distances(xs []Input, v, d, dist []float64) {
	for i, x := range xs {
		for j := range d {
			d[j] = x.Vec[j] - v[j]
		}
		dist[i] = l2(d)
	}
}

func centeredClip(xs []Input, tau float64, iters int) []float64 {
	v := median(xs)
	d := make([]float64, len(v))
	dist := make([]float64, len(xs))
	if tau == 0 {
		distances(xs, v, d, dist)
		tau = weightedMedianOf(xs, dist)
	}
	if tau == 0 {
		return v
	}
	var total float64
	for _, x := range xs {
		total += x.Weight
	}
	for it := 0; it < iters; it++ {
		distances(xs, v, d, dist)
		clear(d)
		for i, x := range xs {
			c := x.Weight / total
			if dist[i] > tau {
				c = float64(c * (tau / dist[i]))
			}
			for j := range d {
				d[j] += float64(c * (x.Vec[j] - v[j]))
			}
		}
		for j := range v {
			v[j] += d[j]
		}
	}
	return v
}

func normClip(xs []Input) []float64 {
	norms := make([]float64, len(xs))
	for i, x := range xs {
		norms[i] = l2(x.Vec)
	}
	c := weightedMedianOf(xs, norms)
	scale := make([]float64, len(xs))
	for i, n := range norms {
		scale[i] = 1
		if n > c {
			scale[i] = c / n
		}
	}
	return mean(xs, scale)
}

// filteredMean is the weighted mean of the inputs whose distance from the coordinate-wise
// median is at most FilterRadius times the weighted median of those distances. The inputs
// within the median distance carry at least half of the weight, so some are always kept.
func filteredMean(xs []Input) []float64 {
	m := median(xs)
	dist := make([]float64, len(xs))
	distances(xs, m, make([]float64, len(m)), dist)
	bound := FilterRadius * weightedMedianOf(xs, dist)
	kept := make([]Input, 0, len(xs))
	for i, x := range xs {
		if dist[i] <= bound {
			kept = append(kept, x)
		}
	}
	return mean(kept, nil)
}
