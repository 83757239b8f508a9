package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/node"
	"github.com/lowband/lowband/training/aggregate"
	"github.com/lowband/lowband/training/compress"
)

// Training modes compared by RunTrain.
const (
	ModeAllReduce     = "allreduce"             // dense gradient averaging after every step
	ModeDiLoCo        = "diloco"                // DiLoCo, dense pseudo-gradients
	ModeCompress      = "diloco+compress"       // DiLoCo through the codec
	ModeCompressDelay = "diloco+compress+delay" // the same with the one-step delay
)

// TrainModes lists every mode in the order RunTrain runs them.
var TrainModes = []string{ModeAllReduce, ModeDiLoCo, ModeCompress, ModeCompressDelay}

// TrainOptions configures `lowband bench train`. Zero fields take DefaultTrainOptions'
// values for the task, except the two momenta: momentum 0 is plain outer SGD.
type TrainOptions struct {
	Task    string // "charlm" or "fmnist"
	Workers int
	Rounds  int
	H       int // inner steps per round
	Batch   int // samples per inner step per worker
	Seed    uint64
	// Seeds is how many seeds each mode runs with (Seed, Seed+1, ...): the initial weights,
	// the workers' slices and their batches change; the validation split and the samples
	// scored stay those of Seed.
	Seeds int

	Corpus    string // charlm text file; empty: Go's Opticks text in GOROOT
	FMNISTDir string // directory of the Fashion-MNIST .gz IDX files

	Context, Embed int
	Hidden         []int

	InnerLR, MinLR, Clip, WeightDecay float64
	Warmup                            int
	// TotalSteps is the length of the inner schedule's cosine; 0 means Rounds·H.
	TotalSteps        int
	OuterLR, Momentum float64
	// CompressOuterLR and CompressMomentum are the outer settings of the two compressed
	// modes. Low-rank updates with error feedback, and even more so with the one-step delay,
	// are unstable under the dense defaults (0.7, 0.9).
	CompressOuterLR, CompressMomentum float64
	// DelayOuterLR and DelayMomentum, when DelayOuterLR is above 0, are the outer step of
	// the delayed mode alone; DelayOuterLR 0 gives it CompressOuterLR and CompressMomentum.
	DelayOuterLR, DelayMomentum float64
	// DelayStart is the start point of the delayed mode's local work: round.StartGlobal
	// (empty) or round.StartEager.
	DelayStart string
	// DelayMix is the delayed mode's round.Config.StartMix (with the eager start): 0 is the
	// eager update.
	DelayMix float64
	// StartResidual is round.Config.StartResidual of both compressed modes: the weight of a
	// worker's error-feedback residual subtracted from its start (0: none).
	StartResidual float64
	// StartSent is the delayed mode's round.Config.StartSent (with the eager start): the
	// weight of a worker's own last message, as decoded, subtracted from its start.
	StartSent float64
	// MergeStep, above 0, gives the delayed mode round.Config.Merge: the round before
	// closes after MergeStep of the H inner steps of the next local work (its
	// contributions delivered by then) and moves that work to θ after it. 0: the round
	// closes after the work, the whole round of staleness.
	MergeStep int

	Compress compress.Config
	// TargetRatio, when above 0, gives the compressed modes a byte budget
	// (compress.Config.ByteBudget) that makes each message about TargetRatio times smaller
	// than the dense fp32 pseudo-gradient; ranks are then allocated across the matrices
	// within [Compress.RankMin, Compress.RankMax].
	TargetRatio float64
	// FirstBudget, with TargetRatio, is compress.Config.FirstBudget: the first message's
	// budget as a multiple of the ratio's, repaid by the next ones.
	FirstBudget float64
	Aggregate   aggregate.Config

	EvalSamples int // validation and test samples to evaluate on (each)
	Modes       []string

	// Spec, when not nil, is the network these options were derived from (FromSpec): the
	// model comes from it, and the compressed modes check shards and bound contributions
	// as its nodes do.
	Spec *node.Params

	// Adversary, with Adversaries above 0, makes the first Adversaries workers of the
	// compressed modes misbehave in that statistical way (node.StatisticalKinds).
	Adversary   string
	Adversaries int
}

// DefaultFMNISTDir is where Debian's dataset-fashion-mnist package installs the data.
const DefaultFMNISTDir = configs.DefaultFMNISTDir

// DefaultTrainOptions returns the measured defaults for a task.
func DefaultTrainOptions(task string) TrainOptions {
	o := TrainOptions{
		Task: task, Workers: 8, Rounds: 12, H: 25, Batch: 32, Seed: 1, Seeds: 1,
		Context: 16, Embed: 64, Hidden: []int{768, 768},
		InnerLR: 2e-3, MinLR: 2e-4, Clip: 1, WeightDecay: 0.01, Warmup: 25,
		OuterLR: 0.7, Momentum: 0.9, CompressOuterLR: 0.35, CompressMomentum: 0.5,
		Compress:    compress.Config{RankMin: 1, RankMax: 2, EnergyTarget: 0.5, PowerIters: 1, BlockSize: 64, DenseBits: 4, FeedbackDecay: 1, Seed: 1},
		Aggregate:   aggregate.Config{Method: "mean"},
		EvalSamples: 4096,
		Modes:       TrainModes,
	}
	if task == "fmnist" {
		o.Hidden, o.Batch, o.EvalSamples = []int{512, 256}, 64, 10000
		o.FMNISTDir = DefaultFMNISTDir
	}
	return o
}

// fill sets zero fields of o from the task's defaults.
func (o *TrainOptions) fill() {
	d := DefaultTrainOptions(o.Task)
	setInt := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	setF := func(v *float64, def float64) {
		if *v == 0 {
			*v = def
		}
	}
	for _, p := range []struct{ v, d *int }{{&o.Workers, &d.Workers}, {&o.Seeds, &d.Seeds}, {&o.Rounds, &d.Rounds}, {&o.H, &d.H}, {&o.Batch, &d.Batch}, {&o.Context, &d.Context}, {&o.Embed, &d.Embed}, {&o.Warmup, &d.Warmup}, {&o.EvalSamples, &d.EvalSamples}} {
		setInt(p.v, *p.d)
	}
	for _, p := range []struct{ v, d *float64 }{{&o.InnerLR, &d.InnerLR}, {&o.MinLR, &d.MinLR}, {&o.Clip, &d.Clip}, {&o.WeightDecay, &d.WeightDecay}, {&o.OuterLR, &d.OuterLR}, {&o.CompressOuterLR, &d.CompressOuterLR}} {
		setF(p.v, *p.d)
	}
	if o.DelayOuterLR == 0 {
		o.DelayOuterLR, o.DelayMomentum = o.CompressOuterLR, o.CompressMomentum
	}
	if o.Seed == 0 {
		o.Seed = d.Seed
	}
	if len(o.Hidden) == 0 {
		o.Hidden = d.Hidden
	}
	if o.Compress == (compress.Config{}) {
		o.Compress = d.Compress
	}
	if o.Aggregate == (aggregate.Config{}) {
		o.Aggregate = d.Aggregate
	}
	if len(o.Modes) == 0 {
		o.Modes = d.Modes
	}
	if o.FMNISTDir == "" {
		o.FMNISTDir = DefaultFMNISTDir
	}
}

// validate refuses settings no mode can run with.
func (o *TrainOptions) validate() error {
	if o.Workers < 1 || o.Rounds < 1 || o.H < 1 || o.Batch < 1 || o.Seeds < 1 {
		return errors.New("bench train: workers, rounds, h, batch and seeds must be positive")
	}
	if o.MergeStep < 0 || o.MergeStep >= o.H && o.MergeStep > 0 {
		return fmt.Errorf("bench train: merge step %d not in [1, H-1] (H %d), or 0 for none", o.MergeStep, o.H)
	}
	if o.TargetRatio < 0 {
		return fmt.Errorf("bench train: target ratio %v is negative", o.TargetRatio)
	}
	if o.Adversaries < 0 || o.Adversaries >= o.Workers {
		return fmt.Errorf("bench train: %d adversaries among %d workers", o.Adversaries, o.Workers)
	}
	if o.Adversaries > 0 && !slices.Contains(node.StatisticalKinds, o.Adversary) {
		return fmt.Errorf("bench train: adversary %q is not one of %v", o.Adversary, node.StatisticalKinds)
	}
	for _, p := range [][2]float64{{o.OuterLR, o.Momentum}, {o.CompressOuterLR, o.CompressMomentum}, {o.DelayOuterLR, o.DelayMomentum}} {
		if !(p[0] > 0 && p[0] <= 10) || !(p[1] >= 0 && p[1] < 1) {
			return fmt.Errorf("bench train: outer lr %v not in (0, 10] or outer momentum %v not in [0, 1)", p[0], p[1])
		}
	}
	return nil
}

// RunTrain runs every requested mode on the same data, the same initial weights and the same
// number of training samples, and measures each. Progress lines go to logw (may be nil).
func RunTrain(ctx context.Context, opt TrainOptions, logw io.Writer) (*TrainResult, error) {
	opt.fill()
	if err := opt.validate(); err != nil {
		return nil, err
	}
	if logw == nil {
		logw = io.Discard
	}
	tk, err := loadTask(opt)
	if err != nil {
		return nil, err
	}
	res := &TrainResult{Task: opt.Task, Workers: opt.Workers, Rounds: opt.Rounds, H: opt.H, Batch: opt.Batch, Seeds: opt.Seeds, Params: tk.params, ValSamples: tk.val.N, TestSamples: tk.test.N}
	for _, name := range opt.Modes {
		runs := make([]*ModeResult, 0, opt.Seeds)
		for s := 0; s < opt.Seeds; s++ {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			o := opt
			o.Seed = opt.Seed + uint64(s)
			start := time.Now()
			mr, err := runMode(ctx, name, o, tk)
			if err != nil {
				return nil, fmt.Errorf("mode %s, seed %d: %w", name, o.Seed, err)
			}
			fmt.Fprintf(logw, "%s seed %d: val loss %.4f, test loss %.4f in %s\n", name, o.Seed, mr.ValLoss, mr.TestLoss, time.Since(start).Round(time.Millisecond))
			runs = append(runs, mr)
		}
		res.Modes = append(res.Modes, meanOf(runs))
	}
	return res, nil
}
