package configs

import "strings"

// TrainingConfig is this node's local training settings (the recipe itself is in the spec).
type TrainingConfig struct {
	// Data is the path of the training data: a text file for charlm, the directory of the
	// IDX files for fmnist. Empty uses the task's default (Go's Opticks text; the Debian
	// dataset-fashion-mnist directory).
	Data string `toml:"data" comment:"training data file or directory; empty uses the task's default"`
}

func defaultTrainingConfig() TrainingConfig { return TrainingConfig{} }

func (t *TrainingConfig) validate() error {
	if strings.ContainsRune(t.Data, 0) {
		return &KeyError{Key: "data", Err: errNoData}
	}
	return nil
}
