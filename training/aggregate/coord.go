package aggregate

import (
	"iter"
	"math"
	"math/bits"
	"slices"
)

// The coordinate-wise statistics are defined on a column: one coordinate's values with their
// weights, sorted by value with ties broken by input position (inputs are in ID order), so
// that every order of the inputs sorts the same way. When the weights are all equal, the
// median is the value at a rank that is the same for every coordinate, which is selected
// rather than sorted for, and the trimmed mean sorts the values alone (medianAt and
// trimmedMeanInto say why that gives the column's bits).

// block is how many coordinates are gathered at a time: each input's values are read
// block at a time, in order, rather than one from every input per coordinate.
const block = 64

// columns yields each coordinate j of the inputs with its values in input order (a slice of
// buf, which holds block·len(xs) values).
func columns(xs []Input, buf []float64) iter.Seq2[int, []float64] {
	return func(yield func(int, []float64) bool) {
		n, d := len(xs), len(xs[0].Vec)
		for lo := 0; lo < d; lo += block {
			hi := min(lo+block, d)
			for i, x := range xs {
				for c, v := range x.Vec[lo:hi] {
					buf[c*n+i] = v
				}
			}
			for c := range hi - lo {
				if !yield(lo+c, buf[c*n:(c+1)*n]) {
					return
				}
			}
		}
	}
}

// entry is one input's value and weight in a column.
type entry struct{ v, w float64 }

// column is one coordinate's entries, sorted (load).
type column []entry

// load fills the column with vals (one per input, in input order) and the inputs' weights,
// sorted, using keys (of the column's length) as scratch. Only inputs of unequal weights
// come here: with equal weights the median selects from the values (medianAt) and the
// trimmed mean sorts the values alone (trimmedMeanInto).
//
// Each value is sorted as a key, one uint64 that holds its sortKey with the low b bits
// replaced by its input position (b bits hold any position): keys compare as the values
// do except between values whose sortKeys differ only in those bits, which the keys order
// by position. Those are next to each other once sorted, and each such group is sorted
// again by the bits that were replaced and the position (the bits above are the same; the
// 2b bits fit in a key for up to 2^32 inputs). Every key is different, so the order is
// the only one there is: by value, ties by position, the order of a stable sort of the
// column, whose sums crossing and trimmedMeanInto then run in. The work is O(n log n)
// whatever the values (sortKeys; the groups together hold at most n keys).
func (c column) load(xs []Input, vals []float64, keys []uint64) {
	n := len(c)
	b := uint(bits.Len(uint(n - 1)))
	pos := uint64(1)<<b - 1
	for i, v := range vals {
		keys[i] = sortKey(v)&^pos | uint64(i)
	}
	// A column in order already (one value in every input, as a coordinate that no input
	// carries is) costs one pass.
	if !slices.IsSorted(keys) {
		sortKeys(keys)
	}
	for lo := 0; lo < n; {
		hi := lo + 1
		for hi < n && keys[hi]>>b == keys[lo]>>b {
			hi++
		}
		if hi-lo > 1 {
			g := keys[lo:hi]
			high := g[0] &^ pos
			for t, k := range g {
				i := k & pos
				g[t] = (sortKey(vals[i])&pos)<<b | i
			}
			// Values that are equal (the common case of such a group) are in order already.
			if !slices.IsSorted(g) {
				sortKeys(g)
			}
			for t, k := range g {
				g[t] = high | k&pos
			}
		}
		lo = hi
	}
	for r, k := range keys {
		i := k & pos
		c[r] = entry{vals[i], xs[i].Weight}
	}
}

// sortKey maps the finite values to uint64s in the same order: a value's key is less than
// another's if and only if the value is less. -0 and +0, which are equal, have one key.
func sortKey(v float64) uint64 {
	u := math.Float64bits(v)
	if u == 1<<63 { // -0
		u = 0
	}
	// A negative value's bits count up as it goes down: flip them all. Flip the sign bit of
	// the others, which puts them above the negative ones.
	return u ^ (uint64(int64(u)>>63) | 1<<63)
}

// sortKeys sorts a. It is an introsort: a quicksort whose partitions do not branch on the
// keys (like nth's), which sorts the short parts by insertion, and, should its pivots (the
// middle one of three keys at fixed places) split badly more than 2·log2(len(a)) times in
// a row, as a peer who chose the values could make them, sorts what is left by heapsort.
// Every key is then moved O(log len(a)) times whatever the keys. (The median of 100
// inputs took less than half the time with it than with slices.Sort.)
func sortKeys(a []uint64) { introSort(a, 2*bits.Len(uint(len(a)))) }

// short is the length up to which introSort sorts by insertion (measured: 8 to 16 are
// about as fast, 24 slower at 200 inputs).
const short = 12

func introSort(a []uint64, depth int) {
	for len(a) > short {
		if depth == 0 {
			heapSort(a)
			return
		}
		depth--
		// The pivot is the middle one of a[0], a[n/2] and a[n-1], moved to a[n-1].
		n := len(a)
		mid := n / 2
		if a[mid] < a[0] {
			a[mid], a[0] = a[0], a[mid]
		}
		if a[n-1] < a[mid] {
			a[n-1], a[mid] = a[mid], a[n-1]
			if a[mid] < a[0] {
				a[mid], a[0] = a[0], a[mid]
			}
		}
		a[mid], a[n-1] = a[n-1], a[mid]
		p := a[n-1]
		m := 0
		for i, x := range a[:n-1] {
			a[i] = a[m]
			a[m] = x
			m += b2i(x < p)
		}
		a[n-1] = a[m]
		a[m] = p
		// Recurse into the shorter side, loop on the longer.
		if m < n-1-m {
			introSort(a[:m], depth)
			a = a[m+1:]
		} else {
			introSort(a[m+1:], depth)
			a = a[:m]
		}
	}
	// An insertion sort that does not branch on the keys either: each key is carried down
	// past all those before it, leaving the larger of each pair behind.
	for i := 1; i < len(a); i++ {
		x := a[i]
		for j := i; j > 0; j-- {
			y := a[j-1]
			a[j] = max(x, y)
			x = min(x, y)
		}
		a[0] = x
	}
}

// heapSort sorts a: introSort's fallback, O(n log n) whatever the keys.
func heapSort(a []uint64) {
	for i := len(a)/2 - 1; i >= 0; i-- {
		siftDown(a, i)
	}
	for n := len(a) - 1; n > 0; n-- {
		a[0], a[n] = a[n], a[0]
		siftDown(a[:n], 0)
	}
}

// siftDown moves a[i] down the max-heap a until it is no less than its children.
func siftDown(a []uint64, i int) {
	for {
		c := 2*i + 1
		if c >= len(a) {
			return
		}
		if c+1 < len(a) && a[c] < a[c+1] {
			c++
		}
		if a[c] <= a[i] {
			return
		}
		a[i], a[c] = a[c], a[i]
		i = c
	}
}

// crossing is where the weighted median of the sorted column c is: the first k at which the
// cumulative weight exceeds half of the total (or the last k), or, mid, the midpoint of k
// and k+1 when it equals half (see the package doc).
func crossing(c column) (k int, mid bool) {
	var total float64
	for _, e := range c {
		total += e.w
	}
	half := total / 2
	var cum float64
	for k, e := range c {
		cum += e.w
		if cum > half || k == len(c)-1 {
			return k, false
		}
		if cum == half {
			return k, true
		}
	}
	panic("aggregate: empty column")
}

// midpoint of a and b, each half rounded: x/2 is x*0.5, which would fuse into the add.
func midpoint(a, b float64) float64 { return float64(a/2) + float64(b/2) }

// weightedMedian of the sorted column.
func (c column) weightedMedian() float64 {
	k, mid := crossing(c)
	if mid {
		return midpoint(c[k].v, c[k+1].v)
	}
	return c[k].v
}

// equalWeights reports whether every input has the same weight.
func equalWeights(xs []Input) bool {
	for _, x := range xs {
		if x.Weight != xs[0].Weight {
			return false
		}
	}
	return true
}

// equalCrossing is crossing for a column of the inputs when their weights are all equal,
// which is then the same for every coordinate.
func equalCrossing(xs []Input) (k int, mid bool) {
	c := make(column, len(xs))
	for i := range c {
		c[i].w = xs[0].Weight
	}
	return crossing(c)
}

// nth reorders a so that a[k] is the value of rank k in it, a[:k] holding values at most
// a[k] and a[k+1:] values at least a[k], and returns a[k]. Which of equal values ends at k
// is not specified: -0 and +0 are equal. It is a quickselect whose partitions do not
// branch on the values (a mispredicted branch costs more than the comparisons), down to
// a few values, which it sorts.
func nth(a []float64, k int) float64 {
	l, r := 0, len(a)
	for r-l > 8 {
		p := median3(a[l], a[(l+r)/2], a[r-1])
		m := l + below(a[l:r], p)
		if k < m {
			r = m
			continue
		}
		e := m + atMost(a[m:r], p)
		if k < e { // a[m:e] all equal p
			return a[k]
		}
		l = e
	}
	insertionSort(a[l:r])
	return a[k]
}

// below reorders a so that its values less than p come first, and returns how many there
// are; atMost does the same for the values at most p. Their loops do not branch on the
// values: b2i compiles to a flag set.
func below(a []float64, p float64) int {
	m := 0
	for i, x := range a {
		a[i] = a[m]
		a[m] = x
		m += b2i(x < p)
	}
	return m
}

func atMost(a []float64, p float64) int {
	m := 0
	for i, x := range a {
		a[i] = a[m]
		a[m] = x
		m += b2i(x <= p)
	}
	return m
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// sortValues sorts a: a quicksort with nth's partitions.
func sortValues(a []float64) {
	for len(a) > 8 {
		p := median3(a[0], a[len(a)/2], a[len(a)-1])
		m := below(a, p)
		e := m + atMost(a[m:], p)
		sortValues(a[:m])
		a = a[e:]
	}
	insertionSort(a)
}

func median3(a, b, c float64) float64 { return max(min(a, b), min(max(a, b), c)) }

func insertionSort(a []float64) {
	for i := 1; i < len(a); i++ {
		x, p := a[i], i
		for ; p > 0 && a[p-1] > x; p-- {
			a[p] = a[p-1]
		}
		a[p] = x
	}
}

// zeroAt is the value of rank k in the column col (in input order) when that value is a
// zero: the sorted column has the negative values first, then the zeros in input order.
func zeroAt(col []float64, k int) float64 {
	for _, v := range col {
		if v < 0 {
			k--
		}
	}
	for _, v := range col {
		if v == 0 {
			if k == 0 {
				return v
			}
			k--
		}
	}
	panic("aggregate: no zero at the rank")
}

// medianAt is the column's weighted median when the weights are all equal and it crosses at
// k (equalCrossing), using a (of the column's length) as scratch. It is the sorted column's
// value at k (or the midpoint of those at k and k+1): equal nonzero values have the same
// bits, so only a zero needs to be told apart from the other zeros (zeroAt).
func medianAt(col, a []float64, k int, mid bool) float64 {
	copy(a, col)
	v := nth(a, k)
	if v == 0 {
		v = zeroAt(col, k)
	}
	if !mid {
		return v
	}
	next := a[k+1]
	for _, x := range a[k+2:] {
		next = min(next, x)
	}
	if next == 0 {
		next = zeroAt(col, k+1)
	}
	return midpoint(v, next)
}

func median(xs []Input) []float64 { return medianInto(make([]float64, len(xs[0].Vec)), xs) }

// medianInto is median written into out, of the inputs' length, which it returns.
func medianInto(out []float64, xs []Input) []float64 {
	buf := make([]float64, block*len(xs))
	if !equalWeights(xs) {
		c, keys := make(column, len(xs)), make([]uint64, len(xs))
		for j, col := range columns(xs, buf) {
			c.load(xs, col, keys)
			out[j] = c.weightedMedian()
		}
		return out
	}
	k, mid := equalCrossing(xs)
	a := make([]float64, len(xs))
	for j, col := range columns(xs, buf) {
		out[j] = medianAt(col, a, k, mid)
	}
	return out
}

func trimmedMean(xs []Input, k int) []float64 {
	return trimmedMeanInto(make([]float64, len(xs[0].Vec)), xs, k)
}

// trimmedMeanInto is trimmedMean written into out, of the inputs' length, which it returns.
func trimmedMeanInto(out []float64, xs []Input, k int) []float64 {
	buf := make([]float64, block*len(xs))
	n := len(xs)
	if !equalWeights(xs) {
		c, keys := make(column, n), make([]uint64, n)
		for j, col := range columns(xs, buf) {
			c.load(xs, col, keys)
			var s, w float64
			for _, e := range c[k : n-k] {
				s += float64(e.w * e.v)
				w += e.w
			}
			out[j] = s / w
		}
		return out
	}
	// With equal weights, sorting the values alone gives the sorted column's values in order,
	// up to the sign of zeros, and adding a zero changes no sum that starts at +0 (the sum
	// is never -0).
	wt := xs[0].Weight
	var w float64
	for range n - 2*k {
		w += wt
	}
	a := make([]float64, n)
	for j, col := range columns(xs, buf) {
		copy(a, col)
		sortValues(a)
		var s float64
		for _, v := range a[k : n-k] {
			s += float64(wt * v)
		}
		out[j] = s / w
	}
	return out
}

// weightedMedianOf returns the weighted median of vals (one per input, in input order).
func weightedMedianOf(xs []Input, vals []float64) float64 {
	c := make(column, len(xs))
	c.load(xs, vals, make([]uint64, len(xs)))
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
