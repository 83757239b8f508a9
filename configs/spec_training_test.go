package configs

import (
	"errors"
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
	if err := empty.validate(); err != nil || empty.BatchSize != 64 || empty.Outer.LR != 0.7 || empty.Outer.Momentum != 0.9 {
		t.Fatalf("filled %+v, %v", empty, err)
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
		{"aggregation.method", func(s *TrainingSpec) { s.Aggregation.Method = "max" }},
		{"aggregation.trim", func(s *TrainingSpec) { s.Aggregation.Trim = 0.5 }},
		{"compression.feedback_decay", func(s *TrainingSpec) { s.Compression.FeedbackDecay = 1.5 }},
		{"outer.start", func(s *TrainingSpec) { s.Outer.Start = "lazy" }},
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

// A spec written before feedback_decay and outer.start existed keeps its meaning: no decay,
// local work from the global parameters.
func TestTrainingSpecNewFieldsDefault(t *testing.T) {
	s := TrainingSpec{Task: TaskCharLM, Outer: OuterOptSpec{LR: 1}, Compression: CompressionSpec{RankMin: 1, RankMax: 4, EnergyTarget: 0.5, PowerIters: 1, BlockSize: 64, MinLowRank: 4096, MaxShardBytes: 1 << 16, DenseBits: 8}}
	if err := s.validate(); err != nil || s.Compression.FeedbackDecay != 1 || s.Outer.Start != StartGlobal || s.Outer.Momentum != 0 {
		t.Fatalf("filled %+v, %+v: %v", s.Outer, s.Compression, err)
	}
	s.Outer.Start, s.Compression.FeedbackDecay = StartEager, 0.95
	if err := s.validate(); err != nil {
		t.Fatal(err)
	}
}
