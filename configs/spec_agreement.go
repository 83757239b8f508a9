package configs

// Defaults and bounds of agreement: how far back a node repairs its rounds, and its
// checkpoints.
const (
	// DefaultRepairDepth is how many closed rounds stay open to repair: a node keeps what
	// it needs to close each of them again with another inclusion list.
	DefaultRepairDepth = 3
	// MaxRepairDepth bounds repair_depth: each round kept costs a copy of the model.
	MaxRepairDepth = 16
	// DefaultCheckpointEvery is how many rounds apart a node makes a checkpoint.
	DefaultCheckpointEvery = 10
	// MaxCheckpointEvery bounds checkpoint_every.
	MaxCheckpointEvery = 100000
	// DefaultCheckpointsKept is how many of its last checkpoints a node keeps and serves.
	DefaultCheckpointsKept = 3
	// MaxCheckpointsKept bounds checkpoints_kept.
	MaxCheckpointsKept = 64
)

// AgreementSpec is how nodes keep one state: how many closed rounds a node may still
// repair when the records of its peers settle on another inclusion list, and how often it
// makes a checkpoint that late joiners and restarts start from. Zero values take the
// defaults.
type AgreementSpec struct {
	// RepairDepth is how many closed rounds stay open to repair.
	RepairDepth int `toml:"repair_depth" cbor:"1,keyasint" comment:"closed rounds a node can still repair, 1-16"`
	// CheckpointEvery is how many rounds apart checkpoints are made (at rounds that are a
	// multiple of it).
	CheckpointEvery int `toml:"checkpoint_every" cbor:"2,keyasint" comment:"rounds between checkpoints"`
	// CheckpointsKept is how many of its last checkpoints a node keeps and serves.
	CheckpointsKept int `toml:"checkpoints_kept" cbor:"3,keyasint" comment:"checkpoints a node keeps and serves"`
}

func (a *AgreementSpec) validate() error {
	if a.RepairDepth == 0 {
		a.RepairDepth = DefaultRepairDepth
	}
	if a.CheckpointEvery == 0 {
		a.CheckpointEvery = DefaultCheckpointEvery
	}
	if a.CheckpointsKept == 0 {
		a.CheckpointsKept = DefaultCheckpointsKept
	}
	switch {
	case a.RepairDepth < 1 || a.RepairDepth > MaxRepairDepth:
		return keyErr("repair_depth", "%d is not in [1, %d]", a.RepairDepth, MaxRepairDepth)
	case a.CheckpointEvery < 1 || a.CheckpointEvery > MaxCheckpointEvery:
		return keyErr("checkpoint_every", "%d is not in [1, %d]", a.CheckpointEvery, MaxCheckpointEvery)
	case a.CheckpointsKept < 1 || a.CheckpointsKept > MaxCheckpointsKept:
		return keyErr("checkpoints_kept", "%d is not in [1, %d]", a.CheckpointsKept, MaxCheckpointsKept)
	}
	return nil
}
