package node

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/node/core"
	"github.com/lowband/lowband/node/store"
	"github.com/lowband/lowband/training"
	"github.com/lowband/lowband/training/aggregate"
	"github.com/lowband/lowband/training/compress"
	"github.com/lowband/lowband/training/round"
	"github.com/lowband/lowband/verify"
)

// The tasks' data shapes, which the spec does not carry: each is fixed by the task's name.
const (
	// CharLMVocab is the network's character model vocabulary: every byte value, a token
	// being the byte itself, so that the model's shapes (and θ_0) follow from the spec
	// alone, whatever text a node trains on.
	CharLMVocab = 256
	// FMNISTPixels and FMNISTClasses are Fashion-MNIST's image size and label count.
	FMNISTPixels, FMNISTClasses = 28 * 28, 10
	// SyntheticDim and SyntheticClasses are the synthetic task's features and labels.
	SyntheticDim, SyntheticClasses = 8, 4
)

// Params is what a network spec means to the pure packages, derived in one place so that
// every node, offline replay and the bench build the same model, round configuration,
// content check and ledger from the same spec. Build it with NewParams; it is read-only
// afterwards and safe for concurrent use. Callers must not modify its maps and slices.
type Params struct {
	// Training is the spec's training section (defaults filled by validation).
	Training configs.TrainingSpec
	// Shapes is the shape of every model tensor, by name.
	Shapes map[string][]int
	// Limits bound what a shard of this network may declare: the spec's shard byte cap, the
	// model's tensor count and size, the spec's highest rank.
	Limits compress.Limits
	// MaxNorm bounds the L2 norm of what one shard reconstructs to.
	MaxNorm float64
	// Ledger and Genesis are the ledger's parameters and genesis state.
	Ledger  incentives.Params
	Genesis incentives.Genesis
	// Checker checks evidence with the spec's policy and time base and CheckContent.
	Checker *incentives.Checker
	// Deadline is when a round may close: the spec's quorum fraction and deadline bounds
	// and k; the window of observations takes core's defaults.
	Deadline core.DeadlineConfig

	round round.Config
}

// NewParams derives a network's Params from its spec, which must have been validated
// (configs.LoadSpec and ParseSpec do). It builds the initial model once to learn its shapes.
func NewParams(s *configs.Spec) (*Params, error) {
	p := &Params{Training: s.Training, MaxNorm: s.Training.Compression.MaxNorm}
	if !(p.MaxNorm > 0) {
		return nil, &configs.KeyError{Key: "training.compression.max_norm", Err: fmt.Errorf("%v is not positive", p.MaxNorm)}
	}
	m, err := p.NewModel()
	if err != nil {
		return nil, fmt.Errorf("training: %w", err)
	}
	p.Shapes = make(map[string][]int)
	for _, t := range m.Params() {
		p.Shapes[t.Name] = t.Shape
	}
	c := s.Training.Compression
	if c.SharedRank > 0 {
		return nil, &configs.KeyError{Key: "training.compression.shared_rank",
			Err: fmt.Errorf("%d: shared bases are measured by lowband bench train only; a node does not run them yet (0)", c.SharedRank)}
	}
	p.Limits = compress.Limits{MaxBytes: c.MaxShardBytes, MaxTensors: len(p.Shapes),
		MaxElements: training.NumParams(m.Params()), MaxRank: c.RankMax,
		NoSparse: true, // the spec has no codec field: every network's codec is low-rank
		NoShared: true} // and derives no shared bases (shared_rank is refused above)
	if p.round, err = roundTemplate(s.Training); err != nil {
		return nil, err
	}
	if err := p.byteBudget(s.NetworkID(), s.Run); err != nil {
		return nil, err
	}
	if p.Ledger, p.Genesis, err = store.ParamsFromSpec(s.Incentives); err != nil {
		return nil, err
	}
	if p.Checker, err = store.CheckerFromSpec(s, p.CheckContent); err != nil {
		return nil, err
	}
	if p.Deadline, err = deadlineConfig(s.Round); err != nil {
		return nil, err
	}
	return p, nil
}

// deadlineConfig is the round-closing rule of the spec, checked by core (defaults filled).
func deadlineConfig(r configs.RoundSpec) (core.DeadlineConfig, error) {
	secs := func(x float64) time.Duration { return time.Duration(x * float64(time.Second)) }
	d, err := core.NewDeadline(core.DeadlineConfig{Quorum: r.Quorum, Min: secs(r.DeadlineMin), Max: secs(r.DeadlineMax), K: r.DeadlineK})
	if err != nil {
		return core.DeadlineConfig{}, &configs.KeyError{Key: "round", Err: err}
	}
	return d.Config(), nil
}

// roundTemplate is the round configuration the spec fixes: everything but Self and Weight.
func roundTemplate(t configs.TrainingSpec) (round.Config, error) {
	c, a := t.Compression, t.Aggregation
	rc := round.Config{
		Delay: t.Outer.Delayed(), OuterLR: t.Outer.LR, Momentum: t.Outer.Momentum,
		StartPoint: t.Outer.Start, StartMix: t.Outer.StartMix, StartResidual: t.Outer.StartResidual, Merge: t.Outer.Merge, MaxNorm: c.MaxNorm,
		Compress: compress.Config{RankMin: c.RankMin, RankMax: c.RankMax, EnergyTarget: c.EnergyTarget,
			PowerIters: c.PowerIters, BlockSize: c.BlockSize, MinLowRank: c.MinLowRank,
			MaxShardBytes: c.MaxShardBytes, DenseBits: c.DenseBits, FactorBits: c.FactorBits, FeedbackDecay: c.FeedbackDecay,
			FirstBudget: c.FirstBudget, DenseEvery: c.DenseEvery, Seed: t.Seed},
		Aggregate: aggregate.Config{Method: aggregate.Method(a.Method), Trim: a.Trim, Tau: a.Tau, Iters: a.Iters},
	}
	if err := rc.Compress.Validate(); err != nil {
		return rc, &configs.KeyError{Key: "training.compression", Err: err}
	}
	if err := rc.Aggregate.Validate(); err != nil {
		return rc, &configs.KeyError{Key: "training.aggregation", Err: err}
	}
	return rc, nil
}

// byteBudget sets the codec's byte budget from the spec's target ratio, if any, and refuses
// a ratio whose budget cannot hold the dense tensors and the lowest ranks. The ratio is of
// what the node sends, its signed shards, to one dense fp32 pseudo-gradient: the payload's
// budget leaves room for each shard's signed envelope (one shard per MaxShardBytes of
// payload; a message the codec cuts at piece boundaries into one more shard than that
// overshoots by one envelope, a few hundred bytes against MaxShardBytes).
func (p *Params) byteBudget(network, run string) error {
	r := p.Training.Compression.TargetRatio
	if r == 0 {
		return nil
	}
	env, err := shardEnvelopeSize(network, run)
	if err != nil {
		return err
	}
	b := compress.RatioBudget(p.Shapes, r)
	shards := (b + p.Limits.MaxBytes - 1) / p.Limits.MaxBytes
	b -= shards * env
	least, err := compress.MinBudget(p.round.Compress, p.Shapes)
	if err == nil && b < least {
		err = fmt.Errorf("%v gives %d bytes a round; the dense tensors and the lowest ranks need %d", r, b, least)
	}
	if err != nil {
		return &configs.KeyError{Key: "training.compression.target_ratio", Err: err}
	}
	p.round.Compress.ByteBudget = b
	return nil
}

// NewModel builds the network's initial model θ_0: the task's model with the spec's sizes,
// its weights drawn from the spec's seed. Every call returns a new model with the same
// weights.
func (p *Params) NewModel() (training.Model, error) {
	t := &p.Training
	rng := rand.New(rand.NewPCG(t.Seed, 0))
	switch t.Task {
	case configs.TaskCharLM:
		return training.NewCharLM(training.CharLMSize{Vocab: CharLMVocab, Context: t.Context, Embed: t.Embed, Hidden: t.Hidden}, rng)
	case configs.TaskFMNIST:
		return training.NewClassifier(FMNISTPixels, t.Hidden, FMNISTClasses, rng)
	case configs.TaskSynthetic:
		return training.NewClassifier(SyntheticDim, t.Hidden, SyntheticClasses, rng)
	}
	return nil, fmt.Errorf("unknown task %q", t.Task)
}

// Initial is the round state a network starts from: round 0, θ_0, no outer momentum.
func (p *Params) Initial() (round.State, error) {
	m, err := p.NewModel()
	if err != nil {
		return round.State{}, err
	}
	return round.State{Params: training.Snapshot(m.Params())}, nil
}

// CheckContent is the content check of a shard payload (compress.CheckShard with the
// model's shapes, the spec's norm bound and the network's limits). Deterministic: the node's
// validators and every evidence check, live or replayed, give the same verdict.
func (p *Params) CheckContent(payload []byte) error {
	return compress.CheckShard(payload, p.Shapes, p.MaxNorm, p.Limits)
}

// Slice is the samples of the task's training set, of n samples, that the peer with the
// given ID trains on: training.PeerSlice of the spec's seed and slice fraction, keyed by the
// peer ID in its canonical text form (verify.ParsePeerID), so that one peer has one slice
// and anyone with the spec and the data set re-derives it. n comes from the caller, which
// loads the data set. Errors: a peer ID that is not canonical, or training.ErrData.
func (p *Params) Slice(peer string, n int) ([]int, error) {
	if err := verify.CheckPeerID(peer); err != nil {
		return nil, fmt.Errorf("data slice: %w", err)
	}
	return training.PeerSlice(n, p.Training.Seed, peer, p.Training.SliceFraction)
}

// GenesisState is the network's ledger at genesis.
func (p *Params) GenesisState() (*incentives.State, error) {
	return incentives.NewState(p.Ledger, p.Genesis)
}

// RoundConfig is the round configuration of the node self whose own contribution counts
// with weight. The rest comes from the spec; the codec's warm-start seed is the spec's
// seed, which a node may vary (it changes only its own encoding).
func (p *Params) RoundConfig(self string, weight float64) round.Config {
	rc := p.round
	rc.Self, rc.Weight = self, weight
	return rc
}
