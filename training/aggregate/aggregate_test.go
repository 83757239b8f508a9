package aggregate

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

var methods = []Config{
	{Method: Mean},
	{Method: TrimmedMean, Trim: 0.2},
	{Method: Median},
	{Method: CenteredClip},
	{Method: CenteredClip, Tau: 0.5, Iters: 5},
	{Method: NormClip},
	{Method: FilteredMean},
}

func randInputs(rng *rand.Rand, n, d int, intWeights bool) []Input {
	in := make([]Input, n)
	for i := range in {
		in[i] = Input{ID: fmt.Sprintf("peer-%03d", rng.IntN(1000)*100+i), Weight: 0.5 + rng.Float64(), Vec: make([]float64, d)}
		if intWeights {
			in[i].Weight = float64(1 + rng.IntN(4))
		}
		for j := range in[i].Vec {
			in[i].Vec[j] = rng.NormFloat64()
			if rng.IntN(10) == 0 { // ties across inputs
				in[i].Vec[j] = float64(rng.IntN(3))
			}
		}
	}
	return in
}

func mustAggregate(t *testing.T, cfg Config, in []Input) []float64 {
	t.Helper()
	out, err := Aggregate(cfg, in)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestPermutationInvariantBitForBit(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, cfg := range methods {
		for _, n := range []int{1, 2, 5, 8} {
			in := randInputs(rng, n, 64, false)
			want := mustAggregate(t, cfg, in)
			for trial := 0; trial < 50; trial++ {
				p := slices.Clone(in)
				rng.Shuffle(len(p), func(i, j int) { p[i], p[j] = p[j], p[i] })
				got := mustAggregate(t, cfg, p)
				for j := range want {
					if math.Float64bits(got[j]) != math.Float64bits(want[j]) {
						t.Fatalf("%s n=%d: permutation changed coordinate %d: %v vs %v", cfg.Method, n, j, got[j], want[j])
					}
				}
			}
		}
	}
}

// Naive references: the weighted mean and the weighted median with integer weights equal the
// plain mean and median of the list with each input repeated Weight times.
func naiveMedian(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return float64(s[len(s)/2-1]/2) + float64(s[len(s)/2]/2)
}

func replicate(in []Input, j int) []float64 {
	var out []float64
	for _, x := range in {
		for r := 0; r < int(x.Weight); r++ {
			out = append(out, x.Vec[j])
		}
	}
	return out
}

func TestAgainstNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 40; trial++ {
		n := 1 + rng.IntN(9)
		in := randInputs(rng, n, 16, true)
		med := mustAggregate(t, Config{Method: Median}, in)
		mean := mustAggregate(t, Config{Method: Mean}, in)
		for j := range med {
			rep := replicate(in, j)
			if want := naiveMedian(rep); med[j] != want {
				t.Fatalf("trial %d coord %d: median %v, naive %v", trial, j, med[j], want)
			}
			var s float64
			for _, v := range rep {
				s += v
			}
			if want := s / float64(len(rep)); math.Abs(mean[j]-want) > 1e-12 {
				t.Fatalf("trial %d coord %d: mean %v, naive %v", trial, j, mean[j], want)
			}
		}
		// Trimmed mean with equal weights: sort, drop k each side, average.
		for i := range in {
			in[i].Weight = 1
		}
		trim := rng.Float64() * 0.49
		tm := mustAggregate(t, Config{Method: TrimmedMean, Trim: trim}, in)
		k := int(math.Floor(trim * float64(n)))
		for j := range tm {
			col := replicate(in, j)
			slices.Sort(col)
			var s float64
			for _, v := range col[k : n-k] {
				s += v
			}
			if want := s / float64(n-2*k); math.Abs(tm[j]-want) > 1e-12 {
				t.Fatalf("trial %d coord %d: trimmed mean (k=%d) %v, naive %v", trial, j, k, tm[j], want)
			}
		}
	}
}

// With a radius no input reaches, centered clipping is plain averaging (one step lands on the
// mean); norm clipping of equal-norm inputs is the mean.
func TestClipsReduceToMean(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	in := randInputs(rng, 6, 32, false)
	mean := mustAggregate(t, Config{Method: Mean}, in)
	cc := mustAggregate(t, Config{Method: CenteredClip, Tau: 1e6, Iters: 2}, in)
	for i := range in {
		n := l2(in[i].Vec)
		for j := range in[i].Vec {
			in[i].Vec[j] /= n
		}
	}
	unit := mustAggregate(t, Config{Method: Mean}, in)
	nc := mustAggregate(t, Config{Method: NormClip}, in)
	for j := range mean {
		if math.Abs(cc[j]-mean[j]) > 1e-12 || math.Abs(nc[j]-unit[j]) > 1e-12 {
			t.Fatalf("coord %d: centered clip %v vs mean %v; norm clip %v vs mean %v", j, cc[j], mean[j], nc[j], unit[j])
		}
	}
}

// One Byzantine input far away moves the mean arbitrarily; the robust rules stay near the
// honest inputs.
func TestRobustToOutlier(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	in := randInputs(rng, 7, 32, false)
	for i := range in {
		in[i].Weight = 1
		for j := range in[i].Vec {
			in[i].Vec[j] = 1 + 0.1*rng.NormFloat64()
		}
	}
	for j := range in[0].Vec {
		in[0].Vec[j] = 1e6
	}
	honest := mustAggregate(t, Config{Method: Mean}, in[1:])
	for _, cfg := range methods {
		out := mustAggregate(t, cfg, in)
		var d float64
		for j := range out {
			d = math.Max(d, math.Abs(out[j]-honest[j]))
		}
		if cfg.Method == Mean {
			if d < 1e4 {
				t.Fatalf("mean not moved by the outlier (%g): the test input is wrong", d)
			}
		} else if d > 0.5 {
			t.Errorf("%s (tau %v) moved %g by one outlier", cfg.Method, cfg.Tau, d)
		}
	}
}

func TestAggregateErrors(t *testing.T) {
	ok := func() []Input {
		return []Input{{ID: "a", Weight: 1, Vec: []float64{1, 2}}, {ID: "b", Weight: 1, Vec: []float64{3, 4}}}
	}
	mod := func(f func(in []Input)) []Input { in := ok(); f(in); return in }
	cases := []struct {
		name string
		cfg  Config
		in   []Input
		want error
	}{
		{"empty", Config{}, nil, ErrEmpty},
		{"length", Config{}, mod(func(in []Input) { in[1].Vec = []float64{1} }), ErrLength},
		{"nan", Config{}, mod(func(in []Input) { in[1].Vec[0] = math.NaN() }), ErrNotFinite},
		{"inf", Config{Method: Median}, mod(func(in []Input) { in[0].Vec[1] = math.Inf(-1) }), ErrNotFinite},
		{"duplicate", Config{}, mod(func(in []Input) { in[1].ID = "a" }), ErrDuplicate},
		{"zero weight", Config{}, mod(func(in []Input) { in[0].Weight = 0 }), ErrWeight},
		{"nan weight", Config{}, mod(func(in []Input) { in[0].Weight = math.NaN() }), ErrWeight},
		{"overflow", Config{}, mod(func(in []Input) { in[0].Vec[0], in[1].Vec[0] = math.MaxFloat64, math.MaxFloat64 }), ErrNotFinite},
		{"method", Config{Method: "max"}, ok(), ErrConfig},
		{"trim", Config{Method: TrimmedMean, Trim: 0.5}, ok(), ErrConfig},
		{"tau", Config{Method: CenteredClip, Tau: -1}, ok(), ErrConfig},
		{"iters", Config{Method: CenteredClip, Iters: -2}, ok(), ErrConfig},
	}
	for _, c := range cases {
		if _, err := Aggregate(c.cfg, c.in); !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	in := ok()
	mustAggregate(t, Config{Method: Median}, in)
	if in[0].ID != "a" || in[0].Vec[0] != 1 || in[1].Vec[1] != 4 {
		t.Fatal("Aggregate modified its input")
	}
}

// The weighted median's midpoint halves each value and rounds before adding. Half the
// smallest subnormal rounds to 0 (ties to even), so the midpoint of 5e-324 and 1e-323 is
// 0 + 5e-324; a fused multiply-add (0.5·a + b/2 in one rounding) would give 1e-323.
func TestMedianMidpointRoundsEachHalf(t *testing.T) {
	a := math.SmallestNonzeroFloat64
	in := []Input{{ID: "a", Weight: 1, Vec: []float64{a}}, {ID: "b", Weight: 1, Vec: []float64{2 * a}}}
	got := mustAggregate(t, Config{Method: Median}, in)[0]
	if math.Float64bits(got) != math.Float64bits(a) {
		t.Fatalf("median of %g and %g = %g, want %g (each half rounded before the sum)", a, 2*a, got, a)
	}
}

// cluster is n inputs of d values near 1 each (unit weights), with IDs in order.
func cluster(rng *rand.Rand, n, d int) []Input {
	in := make([]Input, n)
	for i := range in {
		in[i] = Input{ID: fmt.Sprintf("peer-%02d", i), Weight: 1, Vec: make([]float64, d)}
		for j := range in[i].Vec {
			in[i].Vec[j] = 1 + 0.3*rng.NormFloat64()
		}
	}
	return in
}

// filtered_mean leaves a sign-flipped input out whole and is then, bit for bit, the mean of
// the others; with no such input it is the mean of all. A coordinate-wise rule keeps a
// bias towards the flipped input, since on every coordinate it trims an honest value too.
func TestFilteredMeanLeavesFarInputsOutWhole(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	honest := cluster(rng, 5, 64)
	if got, want := mustAggregate(t, Config{Method: FilteredMean}, honest), mustAggregate(t, Config{Method: Mean}, honest); !slices.Equal(got, want) {
		t.Fatalf("no outlier: filtered mean %v, mean %v", got[:4], want[:4])
	}
	flip := Input{ID: "peer-99", Weight: 1, Vec: make([]float64, 64)}
	for j, v := range honest[0].Vec {
		flip.Vec[j] = -v
	}
	in := append(slices.Clone(honest), flip)
	want := mustAggregate(t, Config{Method: Mean}, honest)
	if got := mustAggregate(t, Config{Method: FilteredMean}, in); !slices.Equal(got, want) {
		t.Fatalf("with a sign-flipped input: filtered mean %v, mean of the others %v", got[:4], want[:4])
	}
	var bias float64
	for j, v := range mustAggregate(t, Config{Method: TrimmedMean, Trim: 0.2}, in) {
		bias += want[j] - v
	}
	if bias <= 0 {
		t.Fatalf("trimmed mean not biased towards the flipped input (%g): the test input is wrong", bias)
	}
}

// A minority with less than half of the weight, wherever it is, moves the result at most
// 3·D from the honest mean, D being the diagonal of the honest inputs' bounding box: the
// median stays in the box, the median distance is at most an honest distance from it, and
// whatever is kept is within twice that.
func TestFilteredMeanMinorityStaysBounded(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for trial := 0; trial < 40; trial++ {
		in := cluster(rng, 7, 16)
		honest := in[:4]
		var diag float64
		for j := range honest[0].Vec {
			lo, hi := math.Inf(1), math.Inf(-1)
			for _, x := range honest {
				lo, hi = math.Min(lo, x.Vec[j]), math.Max(hi, x.Vec[j])
			}
			diag += (hi - lo) * (hi - lo)
		}
		diag = math.Sqrt(diag)
		for _, x := range in[4:] { // 3 of 7 at one point, nearer or further each trial
			for j := range x.Vec {
				x.Vec[j] = 1 + float64(trial-20)*0.5*float64(1+j%3)
			}
		}
		mu := mustAggregate(t, Config{Method: Mean}, honest)
		out := mustAggregate(t, Config{Method: FilteredMean}, in)
		for j := range out {
			out[j] -= mu[j]
		}
		if d := l2(out); d > 3*diag {
			t.Fatalf("trial %d: %v from the honest mean, bound 3·%v", trial, d, diag)
		}
	}
}
