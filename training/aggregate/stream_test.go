package aggregate

import (
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// aggregateStream is the streaming rules' whole result, with ranges of chunk values (0:
// from StreamBudget): what AggregateStreamTo hands over, put together.
func aggregateStream(cfg Config, n, chunk int, in []Source) ([]float64, error) {
	out, _, err := aggregateStreamDropped(cfg, n, chunk, in)
	return out, err
}

// aggregateStreamDropped is aggregateStream with the inputs the rule dropped whole.
func aggregateStreamDropped(cfg Config, n, chunk int, in []Source) ([]float64, []string, error) {
	if err := cfg.Validate(); err != nil {
		return nil, nil, err
	}
	s, err := newStreamer(in, n, chunk)
	if err != nil {
		return nil, nil, err
	}
	out, err := s.aggregate(cfg)
	if err != nil {
		return nil, nil, err
	}
	return out, s.dropped, nil
}

// sources reads the inputs' vectors, counting the values read.
func sources(in []Input, read *int) []Source {
	out := make([]Source, len(in))
	for i, x := range in {
		out[i] = Source{ID: x.ID, Weight: x.Weight, Read: func(lo, hi int, dst []float64) error {
			*read += hi - lo
			copy(dst, x.Vec[lo:hi])
			return nil
		}}
	}
	return out
}

func TestStreamSameBitsAsAggregate(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, cfg := range append(slices.Clone(methods), Config{Method: CenteredClip, Tau: 1e-9}) {
		for _, n := range []int{1, 2, 5, 9} {
			in := randInputs(rng, n, 301, n%2 == 0)
			if n == 9 { // one far input, which the robust rules treat apart
				for j := range in[4].Vec {
					in[4].Vec[j] *= 50
				}
			}
			want := mustAggregate(t, cfg, in)
			for _, chunk := range []int{0, 1, 7, 100, 301} {
				read := 0
				got, err := aggregateStream(cfg, 301, chunk, sources(in, &read))
				if err != nil {
					t.Fatalf("%s n=%d chunk %d: %v", cfg.Method, n, chunk, err)
				}
				for j := range want {
					if math.Float64bits(got[j]) != math.Float64bits(want[j]) {
						t.Fatalf("%s n=%d chunk %d: coordinate %d is %v, Aggregate gave %v", cfg.Method, n, chunk, j, got[j], want[j])
					}
				}
				if read < n*301 {
					t.Fatalf("%s n=%d chunk %d: read %d values of %d", cfg.Method, n, chunk, read, n*301)
				}
			}
		}
	}
}

// AggregateStreamTo hands over, range after range in coordinate order, the bits
// AggregateStreamDropped returns, and the same dropped inputs, for every rule and range
// size; a sink's error ends it with that error.
func TestStreamToHandsOverTheSameBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	for _, cfg := range append(slices.Clone(methods), Config{Method: CenteredClip, Tau: 1e-9}) {
		in := randInputs(rng, 9, 301, false)
		for j := range in[4].Vec {
			in[4].Vec[j] *= 50
		}
		want, wantDropped, err := aggregateStreamDropped(cfg, 301, 0, sources(in, new(int)))
		if err != nil {
			t.Fatal(err)
		}
		for _, chunk := range []int{0, 1, 7, 100, 301} {
			var got []float64
			dropped, err := aggregateStreamTo(cfg, 301, chunk, sources(in, new(int)), func(lo int, g []float64) error {
				if lo != len(got) {
					return errors.New("a range out of order")
				}
				got = append(got, g...)
				return nil
			})
			if err != nil {
				t.Fatalf("%s chunk %d: %v", cfg.Method, chunk, err)
			}
			if !slices.Equal(dropped, wantDropped) || len(got) != len(want) {
				t.Fatalf("%s chunk %d: %d values, dropped %v; want %d, %v", cfg.Method, chunk, len(got), dropped, len(want), wantDropped)
			}
			for j := range want {
				if math.Float64bits(got[j]) != math.Float64bits(want[j]) {
					t.Fatalf("%s chunk %d: coordinate %d is %v, want %v", cfg.Method, chunk, j, got[j], want[j])
				}
			}
		}
		stop := errors.New("stop")
		if _, err := AggregateStreamTo(cfg, 301, sources(in, new(int)), func(int, []float64) error { return stop }); !errors.Is(err, stop) {
			t.Fatalf("%s: a sink's error gave %v", cfg.Method, err)
		}
	}
}

// Handed to a sink, filtered_mean's result is never held whole: aggregating 4 inputs of
// 2^20 values (8 MB each) allocates the range buffers, under half of one such vector.
func TestStreamToAllocatesNoWholeResult(t *testing.T) {
	const n = 1 << 20
	rng := rand.New(rand.NewPCG(17, 18))
	in := randInputs(rng, 4, n, false)
	src := sources(in, new(int))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := AggregateStreamTo(Config{Method: FilteredMean}, n, src, func(int, []float64) error { return nil })
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8*n/2 {
		t.Errorf("aggregating allocated %d bytes, one input is %d", alloc, 8*n)
	}
}

func TestStreamHoldsOneRangeOfEachInput(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	in := randInputs(rng, 4, 5000, false)
	widest := 0
	src := sources(in, new(int))
	for i := range src {
		read := src[i].Read
		src[i].Read = func(lo, hi int, dst []float64) error {
			widest = max(widest, hi-lo)
			return read(lo, hi, dst)
		}
	}
	if _, err := aggregateStream(Config{Method: FilteredMean}, 5000, 600, src); err != nil {
		t.Fatal(err)
	}
	if widest != 600 {
		t.Errorf("widest range read %d, want 600", widest)
	}
}

func TestStreamErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	in := randInputs(rng, 3, 50, false)
	bad := slices.Clone(in)
	bad[1].Vec = slices.Clone(bad[1].Vec)
	bad[1].Vec[40] = math.Inf(1)
	dup := slices.Clone(in)
	dup[2].ID = dup[0].ID
	zero := slices.Clone(in)
	zero[0].Weight = 0
	failing := sources(in, new(int))
	boom := errors.New("boom")
	failing[2].Read = func(int, int, []float64) error { return boom }
	for name, c := range map[string]struct {
		src []Source
		is  error
	}{
		"none": {nil, ErrEmpty}, "not finite": {sources(bad, new(int)), ErrNotFinite},
		"duplicate": {sources(dup, new(int)), ErrDuplicate}, "weight": {sources(zero, new(int)), ErrWeight},
		"read": {failing, boom},
	} {
		for _, cfg := range methods {
			if _, err := aggregateStream(cfg, 50, 16, c.src); !errors.Is(err, c.is) {
				t.Errorf("%s, %s: %v, want %v", name, cfg.Method, err, c.is)
			}
		}
	}
}

// AggregateStreamDropped names exactly the inputs filtered_mean leaves out (a naive
// reference: the inputs further from the coordinate-wise median than FilterRadius times
// the weighted median distance), in ID order, and the result is the mean of the others;
// no other rule drops an input.
func TestStreamDroppedNamesTheInputsFilteredMeanLeavesOut(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	for trial := range 20 {
		in := cluster(rng, 6, 40)
		far := map[int]float64{1: -1} // input 1 sign-flipped, and every other trial input 4 scaled
		if trial%2 == 1 {
			far[4] = 100
		}
		for k, f := range far {
			for j := range in[k].Vec {
				in[k].Vec[j] *= f
			}
		}
		m := median(sortedOrFail(t, in))
		xs := sortedOrFail(t, in)
		dist := make([]float64, len(xs))
		for i, x := range xs {
			var s float64
			for j, v := range x.Vec {
				d := v - m[j]
				s += float64(d * d)
			}
			dist[i] = math.Sqrt(s)
		}
		bound := FilterRadius * weightedMedianOf(xs, dist)
		var want []string
		var kept []Input
		for i, x := range xs {
			if dist[i] > bound {
				want = append(want, x.ID)
			} else {
				kept = append(kept, x)
			}
		}
		if len(want) == 0 {
			t.Fatalf("trial %d: the far inputs are not far: the test input is wrong", trial)
		}
		for _, cfg := range methods {
			got, dropped, err := aggregateStreamDropped(cfg, 40, 0, sources(in, new(int)))
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Method != FilteredMean {
				if len(dropped) != 0 {
					t.Fatalf("%s dropped %v", cfg.Method, dropped)
				}
				continue
			}
			if !slices.Equal(dropped, want) {
				t.Fatalf("trial %d: dropped %v, the reference drops %v", trial, dropped, want)
			}
			if mu := mustAggregate(t, Config{Method: Mean}, kept); !slices.Equal(got, mu) {
				t.Fatalf("trial %d: filtered mean %v, mean of the kept %v", trial, got[:3], mu[:3])
			}
		}
	}
}

func sortedOrFail(t *testing.T, in []Input) []Input {
	t.Helper()
	xs, err := sorted(in)
	if err != nil {
		t.Fatal(err)
	}
	return xs
}
