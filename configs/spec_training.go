package configs

// TrainingSpec is the network's model and training recipe. Every node trains the same model
// with the same recipe; only the data slice differs.
type TrainingSpec struct {
	// Task names the model and data: "charlm", "fmnist" or "synthetic".
	Task string `toml:"task" cbor:"1,keyasint"`
}

func (t *TrainingSpec) validate() error { return nil }
