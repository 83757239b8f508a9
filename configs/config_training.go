package configs

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// DefaultFMNISTDir is where Debian's dataset-fashion-mnist package installs Fashion-MNIST:
// the fmnist task's default data.
const DefaultFMNISTDir = "/usr/share/datasets/fashion-mnist"

// DefaultCorpus is the charlm task's default text: Go's copy of Newton's Opticks, under
// $GOROOT, else under the GOROOT the binary was built with.
func DefaultCorpus() string {
	root := os.Getenv("GOROOT")
	if root == "" {
		root = runtime.GOROOT() //nolint:staticcheck // the build's GOROOT is the best default
	}
	return filepath.Join(root, "src", "testdata", "Isaac.Newton-Opticks.txt")
}

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
