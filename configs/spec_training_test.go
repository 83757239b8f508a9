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
