package configs

// TrainingConfig is this node's local training settings (the recipe itself is in the spec).
type TrainingConfig struct {
	// Data is the path of the training data; empty uses the task's default.
	Data string `toml:"data" comment:"training data file or directory; empty uses the task's default"`
}

func defaultTrainingConfig() TrainingConfig { return TrainingConfig{} }

func (t *TrainingConfig) validate() error { return nil }
