package aggregate

// The coordinate-wise statistics as first written (an insertion sort of every coordinate's
// values), kept as the reference that the property test and the benchmarks compare against.

type refColumn struct {
	v   []float64
	w   []float64
	idx []int
}

func newRefColumn(n int) *refColumn {
	return &refColumn{v: make([]float64, n), w: make([]float64, n), idx: make([]int, n)}
}

func (c *refColumn) load(xs []Input, j int) {
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

func (c *refColumn) weightedMedian() float64 {
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
		if cum == half {
			return float64(c.v[k]/2) + float64(c.v[k+1]/2)
		}
	}
	panic("unreachable")
}

func refMedian(xs []Input) []float64 {
	out := make([]float64, len(xs[0].Vec))
	c := newRefColumn(len(xs))
	for j := range out {
		c.load(xs, j)
		out[j] = c.weightedMedian()
	}
	return out
}

func refTrimmedMean(xs []Input, k int) []float64 {
	out := make([]float64, len(xs[0].Vec))
	c := newRefColumn(len(xs))
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

func refWeightedMedianOf(xs []Input, vals []float64) float64 {
	one := make([]Input, len(xs))
	for i, x := range xs {
		one[i] = Input{ID: x.ID, Weight: x.Weight, Vec: vals[i : i+1]}
	}
	c := newRefColumn(len(xs))
	c.load(one, 0)
	return c.weightedMedian()
}

func refFilteredMean(xs []Input) []float64 {
	m := refMedian(xs)
	dist := make([]float64, len(xs))
	distances(xs, m, make([]float64, len(m)), dist)
	bound := FilterRadius * refWeightedMedianOf(xs, dist)
	kept := make([]Input, 0, len(xs))
	for i, x := range xs {
		if dist[i] <= bound {
			kept = append(kept, x)
		}
	}
	return mean(kept, nil)
}
