package configs

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestTrainingSpecDefaultsAndErrors(t *testing.T) {
	for _, task := range Tasks {
		d := DefaultTrainingSpecFor(task)
		if err := d.validate(); err != nil {
			t.Errorf("default %s recipe: %v", task, err)
		}
	}
	empty := TrainingSpec{Task: TaskFMNIST}
	if err := empty.validate(); err != nil || empty.BatchSize != 64 || empty.Outer.LR != 0.7 || empty.Outer.StartMix != 0.5 || empty.Outer.StartResidual != 0.25 || empty.Outer.Momentum != 0 || empty.Outer.Start != StartEager ||
		empty.Outer.Delayed() != 1 || empty.Compression.MaxNorm != DefaultMaxNorm || empty.SliceFraction != DefaultSliceFraction ||
		empty.Compression != DefaultTrainingSpec().Compression {
		t.Fatalf("filled %+v, %v", empty, err)
	}
	// A compression section that sets only the fields added later keeps them and takes
	// every other field, feedback decay, factor bits and target ratio included, from the
	// defaults.
	some := TrainingSpec{Task: TaskCharLM, Compression: CompressionSpec{MaxNorm: 7}}
	want := DefaultTrainingSpec().Compression
	want.MaxNorm = 7
	if err := some.validate(); err != nil || some.Compression != want {
		t.Fatalf("filled %+v, want %+v: %v", some.Compression, want, err)
	}
	cases := []struct {
		key string
		mut func(*TrainingSpec)
	}{
		{"task", func(s *TrainingSpec) { s.Task = "gpt" }},
		{"hidden[1]", func(s *TrainingSpec) { s.Hidden = []int{4, -1} }},
		{"inner.lr", func(s *TrainingSpec) { s.Inner.LR = -1 }},
		{"inner.total_steps", func(s *TrainingSpec) { s.Inner.TotalSteps = 1; s.Inner.Warmup = 5 }},
		{"outer.momentum", func(s *TrainingSpec) { s.Outer.Momentum = 1 }},
		{"compression.rank_max", func(s *TrainingSpec) { s.Compression.RankMin = 3; s.Compression.RankMax = 2 }},
		{"compression.dense_bits", func(s *TrainingSpec) { s.Compression.DenseBits = 5 }},
		{"compression.factor_bits", func(s *TrainingSpec) { s.Compression.FactorBits = 3 }},
		{"compression.target_ratio", func(s *TrainingSpec) { s.Compression.TargetRatio = 0.5 }},
		{"compression.target_ratio", func(s *TrainingSpec) { s.Compression.TargetRatio = math.NaN() }},
		{"compression.factor_bits", func(s *TrainingSpec) { s.Compression.FactorBits, s.Compression.BlockSize = 2, 10 }},
		{"aggregation.method", func(s *TrainingSpec) { s.Aggregation.Method = "max" }},
		{"aggregation.trim", func(s *TrainingSpec) { s.Aggregation.Trim = 0.5 }},
		{"compression.feedback_decay", func(s *TrainingSpec) { s.Compression.FeedbackDecay = 1.5 }},
		{"outer.start", func(s *TrainingSpec) { s.Outer.Start = "lazy" }},
		{"outer.delay", func(s *TrainingSpec) { s.Outer.Delay = ptr(2) }},
		{"outer.start", func(s *TrainingSpec) { s.Outer.Start, s.Outer.Delay = StartEager, ptr(0) }},
		{"outer.start_mix", func(s *TrainingSpec) { s.Outer.StartMix = 1.5 }},
		{"outer.start_mix", func(s *TrainingSpec) { s.Outer.StartMix = math.NaN() }},
		{"outer.start_mix", func(s *TrainingSpec) { s.Outer.Start, s.Outer.StartMix = StartGlobal, 0.5 }},
		{"outer.start_residual", func(s *TrainingSpec) { s.Outer.StartResidual = 1.5 }},
		{"outer.start_residual", func(s *TrainingSpec) { s.Outer.StartResidual = math.NaN() }},
		{"outer.merge", func(s *TrainingSpec) {
			s.Outer.Delay, s.Outer.Start, s.Outer.StartMix, s.Outer.Merge = ptr(0), StartGlobal, 0, true
		}},
		{"compression.first_budget", func(s *TrainingSpec) { s.Compression.FirstBudget = 0.5 }},
		{"compression.first_budget", func(s *TrainingSpec) { s.Compression.FirstBudget = 17 }},
		{"compression.first_budget", func(s *TrainingSpec) { s.Compression.FirstBudget = math.Inf(1) }},
		{"compression.dense_every", func(s *TrainingSpec) { s.Compression.DenseEvery = -1 }},
		{"compression.dense_every", func(s *TrainingSpec) { s.Compression.DenseEvery = 65 }},
		{"compression.shared_rank", func(s *TrainingSpec) { s.Compression.SharedRank = -1 }},
		{"compression.shared_rank", func(s *TrainingSpec) { s.Compression.SharedRank = 65 }},
		{"compression.shared_rank", func(s *TrainingSpec) { s.Compression.SharedRank = 16 }},              // with the default delay
		{"compression.shared_power_iters", func(s *TrainingSpec) { s.Compression.SharedPowerIters = -1 }}, // without shared_rank
		{"compression.shared_power_iters", func(s *TrainingSpec) {
			s.Outer.Delay, s.Outer.Start, s.Outer.StartMix, s.Outer.Merge = ptr(0), StartGlobal, 0, false
			s.Compression.SharedRank, s.Compression.SharedPowerIters = 16, 2
		}},
		{"compression.shared_power_iters", func(s *TrainingSpec) {
			s.Outer.Delay, s.Outer.Start, s.Outer.StartMix, s.Outer.Merge = ptr(0), StartGlobal, 0, false
			s.Compression.SharedRank, s.Compression.SharedPowerIters = 16, -2
		}},
		{"compression.max_norm", func(s *TrainingSpec) { s.Compression.MaxNorm = -1 }},
		{"compression.max_norm", func(s *TrainingSpec) { s.Compression.MaxNorm = math.Inf(1) }},
		{"compression.max_norm", func(s *TrainingSpec) { s.Compression.MaxNorm = 1e300 }}, // would let a round's aggregate overflow
		{"slice_fraction", func(s *TrainingSpec) { s.SliceFraction = 1.5 }},
		{"slice_fraction", func(s *TrainingSpec) { s.SliceFraction = -0.25 }},
		{"slice_fraction", func(s *TrainingSpec) { s.SliceFraction = math.NaN() }},
	}
	for _, c := range cases {
		s := DefaultTrainingSpec()
		c.mut(&s)
		var ke *KeyError
		if err := s.validate(); !errors.As(err, &ke) || ke.Key != c.key {
			t.Errorf("%s: got %v", c.key, err)
		}
	}
}

// A spec written before feedback_decay, factor_bits, outer.start, start_mix,
// start_residual, first_budget and dense_every existed keeps its meaning: no decay, 4-bit
// factors, local work from the global parameters, no mix, no residual in the start, no
// larger first message, every tensor in every message.
func TestTrainingSpecNewFieldsDefault(t *testing.T) {
	s := TrainingSpec{Task: TaskCharLM, Outer: OuterOptSpec{LR: 1}, Compression: CompressionSpec{RankMin: 1, RankMax: 4, EnergyTarget: 0.5, PowerIters: 1, BlockSize: 64, MinLowRank: 4096, MaxShardBytes: 1 << 16, DenseBits: 8}}
	if err := s.validate(); err != nil || s.Compression.FeedbackDecay != 1 || s.Compression.FactorBits != 4 || s.Outer.Start != StartGlobal || s.Outer.Momentum != 0 ||
		s.Outer.StartMix != 0 || s.Outer.StartResidual != 0 || s.Compression.FirstBudget != 0 || s.Compression.DenseEvery != 0 {
		t.Fatalf("filled %+v, %+v: %v", s.Outer, s.Compression, err)
	}
	s.Outer.Start, s.Compression.FeedbackDecay, s.Compression.FactorBits = StartEager, 0.95, 2
	if err := s.validate(); err != nil || s.Compression.FactorBits != 2 {
		t.Fatal(err)
	}
}

// An outer section that sets only the delay keeps it and takes the rest from the defaults
// (with delay 0, the start from the global parameters); delay 0 is a setting, not a
// missing value.
func TestTrainingSpecDelayZeroKept(t *testing.T) {
	s := TrainingSpec{Task: TaskSynthetic, Outer: OuterOptSpec{Delay: ptr(0)}}
	if err := s.validate(); err != nil || s.Outer.Delayed() != 0 || s.Outer.LR != 0.7 || s.Outer.Momentum != 0 || s.Outer.Start != StartGlobal || s.Outer.StartMix != 0 {
		t.Fatalf("filled %+v: %v", s.Outer, err)
	}
}

// Bad delay, norm bound and slice fraction in a file are named with the file, the line and
// the key.
func TestTrainingSpecDelayNormSliceErrorsNameLine(t *testing.T) {
	head := "version = 1\nname = \"x\"\nrun = \"r\"\n"
	for _, tc := range []struct{ body, key string }{
		{"[training.outer]\nlr = 0.3\ndelay = 2\n", "training.outer.delay"},
		{"[training.compression]\nmax_norm = -5.0\n", "training.compression.max_norm"},
		{"[training]\ntask = \"synthetic\"\nslice_fraction = 2.0\n", "training.slice_fraction"},
	} {
		_, err := ParseSpec("spec.toml", []byte(head+tc.body))
		var ke *KeyError
		if !errors.As(err, &ke) || ke.Key != tc.key || ke.File != "spec.toml" || ke.Line != strings.Count(head+tc.body, "\n") {
			t.Errorf("%q: got %v, want %s at spec.toml:%d", tc.body, err, tc.key, strings.Count(head+tc.body, "\n"))
		}
	}
}

// compression.shared_rank is accepted without the delay and kept as written; a spec that
// sets only it (and shared_power_iters) among the codec's fields still gets the default
// codec besides them.
func TestSharedRankWithoutDelay(t *testing.T) {
	s := DefaultTrainingSpec()
	s.Outer.Delay, s.Outer.Start, s.Outer.StartMix, s.Outer.Merge = ptr(0), StartGlobal, 0, false
	s.Compression.SharedRank = 16
	if err := s.validate(); err != nil || s.Compression.SharedRank != 16 {
		t.Fatalf("shared rank 16 without the delay: %v, kept %d", err, s.Compression.SharedRank)
	}
	only := DefaultTrainingSpec()
	only.Outer = s.Outer
	only.Compression = CompressionSpec{SharedRank: 8}
	if err := only.validate(); err != nil || only.Compression.SharedRank != 8 || only.Compression.RankMax != DefaultTrainingSpec().Compression.RankMax {
		t.Fatalf("only shared_rank set: %v, %+v", err, only.Compression)
	}
	both := DefaultTrainingSpec()
	both.Outer = s.Outer
	both.Compression = CompressionSpec{SharedRank: 8, SharedPowerIters: -1}
	if err := both.validate(); err != nil || both.Compression.SharedPowerIters != -1 || both.Compression.RankMax != DefaultTrainingSpec().Compression.RankMax {
		t.Fatalf("only shared_rank and shared_power_iters set: %v, %+v", err, both.Compression)
	}
}
