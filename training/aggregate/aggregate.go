package aggregate

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Input is one contributor's flattened pseudo-gradient.
type Input struct {
	ID     string
	Weight float64
	Vec    []float64
}

// Method names an aggregation rule.
type Method string

// The aggregation rules (see the package doc).
const (
	Mean         Method = "mean"
	TrimmedMean  Method = "trimmed_mean"
	Median       Method = "median"
	CenteredClip Method = "centered_clip"
	NormClip     Method = "norm_clip"
	FilteredMean Method = "filtered_mean"
)

// FilterRadius is filtered_mean's radius, as a multiple of the weighted median distance of
// the inputs from their coordinate-wise median.
const FilterRadius = 2

// DefaultIters is the number of centered-clipping iterations when Config.Iters is 0.
const DefaultIters = 3

// Errors returned (wrapped) by Validate and Aggregate.
var (
	ErrConfig    = errors.New("invalid aggregation config")
	ErrEmpty     = errors.New("no inputs")
	ErrLength    = errors.New("input length mismatch")
	ErrNotFinite = errors.New("input not finite")
	ErrDuplicate = errors.New("duplicate input ID")
	ErrWeight    = errors.New("input weight not finite and positive")
)

// Config selects and tunes the rule.
type Config struct {
	Method Method  // "" means mean
	Trim   float64 // trimmed_mean: fraction trimmed from each side, in [0, 0.5)
	Tau    float64 // centered_clip: clipping radius; 0 = the median distance from the median
	Iters  int     // centered_clip: iterations; 0 = DefaultIters
}

// Validate fills defaults and rejects unknown methods and out-of-range parameters.
func (c *Config) Validate() error {
	if c.Method == "" {
		c.Method = Mean
	}
	if c.Iters == 0 {
		c.Iters = DefaultIters
	}
	switch {
	case !slices.Contains([]Method{Mean, TrimmedMean, Median, CenteredClip, NormClip, FilteredMean}, c.Method):
		return fmt.Errorf("%w: unknown method %q", ErrConfig, c.Method)
	case !(c.Trim >= 0 && c.Trim < 0.5):
		return fmt.Errorf("%w: trim %v not in [0, 0.5)", ErrConfig, c.Trim)
	case !(c.Tau >= 0 && c.Tau <= math.MaxFloat64):
		return fmt.Errorf("%w: tau %v not finite and >= 0", ErrConfig, c.Tau)
	case c.Iters < 1 || c.Iters > 1000:
		return fmt.Errorf("%w: iterations %d not in [1, 1000]", ErrConfig, c.Iters)
	}
	return nil
}

// Aggregate combines the inputs with the configured rule. It does not modify the inputs and
// returns a new slice. It fails on no inputs, vectors of different lengths, non-finite values,
// weights that are not finite and positive, and duplicate IDs.
func Aggregate(cfg Config, in []Input) ([]float64, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	xs, err := sorted(in)
	if err != nil {
		return nil, err
	}
	var out []float64
	switch cfg.Method {
	case TrimmedMean:
		out = trimmedMean(xs, int(math.Floor(cfg.Trim*float64(len(xs)))))
	case Median:
		out = median(xs)
	case CenteredClip:
		out = centeredClip(xs, cfg.Tau, cfg.Iters)
	case NormClip:
		out = normClip(xs)
	case FilteredMean:
		out = filteredMean(xs)
	default:
		out = mean(xs, nil)
	}
	for _, v := range out {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%w: result overflowed", ErrNotFinite)
		}
	}
	return out, nil
}

// sorted checks the inputs and returns them ordered by ID.
func sorted(in []Input) ([]Input, error) {
	if len(in) == 0 {
		return nil, ErrEmpty
	}
	xs := slices.Clone(in)
	slices.SortFunc(xs, func(a, b Input) int { return strings.Compare(a.ID, b.ID) })
	for i, x := range xs {
		if i > 0 && x.ID == xs[i-1].ID {
			return nil, fmt.Errorf("%w: %q", ErrDuplicate, x.ID)
		}
		if len(x.Vec) != len(xs[0].Vec) {
			return nil, fmt.Errorf("%w: %q has %d values, %q has %d", ErrLength, x.ID, len(x.Vec), xs[0].ID, len(xs[0].Vec))
		}
		if !(x.Weight > 0 && x.Weight <= math.MaxFloat64) {
			return nil, fmt.Errorf("%w: %q weight %v", ErrWeight, x.ID, x.Weight)
		}
		for _, v := range x.Vec {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("%w: %q", ErrNotFinite, x.ID)
			}
		}
	}
	return xs, nil
}

// mean returns Σ wᵢ·sᵢ·xᵢ / Σ wᵢ, where sᵢ = scale[i] (1 when scale is nil).
func mean(xs []Input, scale []float64) []float64 {
	return meanInto(make([]float64, len(xs[0].Vec)), xs, scale)
}

// meanInto is mean written into out, of the inputs' length, which it clears first and
// returns.
func meanInto(out []float64, xs []Input, scale []float64) []float64 {
	clear(out)
	var w float64
	for i, x := range xs {
		w += x.Weight
		c := x.Weight
		if scale != nil {
			c = float64(c * scale[i])
		}
		for j, v := range x.Vec {
			out[j] += float64(c * v)
		}
	}
	for j := range out {
		out[j] /= w
	}
	return out
}

func l2(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += float64(x * x)
	}
	return math.Sqrt(s)
}
