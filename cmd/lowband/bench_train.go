package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/lowband/lowband/bench"
	"github.com/lowband/lowband/node"
	"github.com/lowband/lowband/training/aggregate"
	"github.com/lowband/lowband/training/compress"
	"github.com/lowband/lowband/training/round"
	"github.com/urfave/cli/v2"
)

func benchTrainCommand() *cli.Command {
	d := bench.DefaultTrainOptions("charlm")
	return &cli.Command{
		Name:  "train",
		Usage: "DiLoCo training modes compared: allreduce, diloco, diloco+compress, diloco+compress+delay",
		Description: "Simulates --workers nodes in one process on the same data, initial weights and\n" +
			"number of samples, and reports each mode's loss on a validation split taken out of\n" +
			"the training data (choose settings by it) and on held-out test samples (report\n" +
			"it), bytes sent and speed.\n" +
			"Zero-valued flags take the task's defaults (charlm: 2x768 hidden MLP LM on Go's\n" +
			"Opticks text; fmnist: 512-256 MLP on /usr/share/datasets/fashion-mnist), except\n" +
			"the momenta: --momentum 0 and --compress-momentum 0 are plain outer SGD.\n" +
			"--spec runs a network's recipe instead, derived as a node derives it: its model,\n" +
			"batch, H, inner schedule, and for the compressed modes its outer step, start point,\n" +
			"codec, aggregation and shard checks; recipe flags given on the command line override it.",
		Flags: []cli.Flag{
			jsonFlag,
			specFlag,
			&cli.StringFlag{Name: "task", Value: "charlm", Usage: "charlm or fmnist"},
			&cli.IntFlag{Name: "workers", Value: d.Workers, Usage: "simulated nodes"},
			&cli.IntFlag{Name: "rounds", Value: d.Rounds, Usage: "outer rounds"},
			&cli.IntFlag{Name: "inner-steps", Aliases: []string{"H"}, Value: d.H, Usage: "inner steps per round (H)"},
			&cli.IntFlag{Name: "batch", Usage: "samples per inner step per worker (0: task default)"},
			&cli.Uint64Flag{Name: "seed", Value: d.Seed, Usage: "weights, data slices and batches; the validation split and the samples scored"},
			&cli.IntFlag{Name: "seeds", Value: d.Seeds, Usage: "runs per mode, seeds --seed, --seed+1, ...: losses are means with standard deviations"},
			&cli.StringFlag{Name: "corpus", Usage: "charlm text file (default: Go's Opticks text in GOROOT)"},
			&cli.StringFlag{Name: "fmnist-dir", Value: bench.DefaultFMNISTDir, Usage: "directory of the Fashion-MNIST IDX .gz files"},
			&cli.IntSliceFlag{Name: "hidden", Usage: "hidden layer widths (default: task's)"},
			&cli.Float64Flag{Name: "inner-lr", Value: d.InnerLR, Usage: "peak AdamW learning rate"},
			&cli.Float64Flag{Name: "outer-lr", Value: d.OuterLR, Usage: "Nesterov outer learning rate"},
			&cli.Float64Flag{Name: "momentum", Value: d.Momentum, Usage: "Nesterov outer momentum (0: plain SGD)"},
			&cli.Float64Flag{Name: "compress-outer-lr", Value: d.CompressOuterLR, Usage: "outer learning rate of the compressed modes"},
			&cli.Float64Flag{Name: "compress-momentum", Value: d.CompressMomentum, Usage: "outer momentum of the compressed modes (0: plain SGD)"},
			&cli.Float64Flag{Name: "delay-outer-lr", Usage: "outer learning rate of the delayed mode alone (0: --compress-outer-lr and --compress-momentum)"},
			&cli.Float64Flag{Name: "delay-momentum", Usage: "outer momentum of the delayed mode, with --delay-outer-lr (0: plain SGD)"},
			&cli.StringFlag{Name: "delay-start", Value: round.StartGlobal, Usage: "start point of the delayed mode's local work: global or eager"},
			&cli.Float64Flag{Name: "delay-mix", Usage: "with --delay-start eager: the weight in [0, 1] of a node's own last pseudo-gradient in its start (0: the outer lr times its share, the eager update)"},
			&cli.Float64Flag{Name: "start-residual", Usage: "compressed modes: the weight in [0, 1] of a worker's error-feedback residual subtracted from its start (0: none)"},
			&cli.Float64Flag{Name: "start-sent", Usage: "with --delay-start eager: the weight in [0, 1] of a worker's own last message, as decoded, subtracted from its start (0: none)"},
			&cli.IntFlag{Name: "merge-step", Usage: "delayed mode: the round before closes after this many of the next round's H inner steps, and that work moves to θ after it (round.Config.Merge; 0: the round closes after the work)"},
			&cli.Float64Flag{Name: "feedback-decay", Value: d.Compress.FeedbackDecay, Usage: "decay of the error-feedback residual, in (0, 1]"},
			&cli.IntFlag{Name: "rank-min", Value: d.Compress.RankMin, Usage: "lowest rank of a compressed matrix"},
			&cli.IntFlag{Name: "rank-max", Value: d.Compress.RankMax, Usage: "highest rank of a compressed matrix"},
			&cli.IntFlag{Name: "factor-bits", Value: compress.DefaultFactorBits, Usage: "code width of low-rank factors: 4, 2 (twice the rank at equal bytes) or 1"},
			&cli.IntFlag{Name: "power-iters", Value: d.Compress.PowerIters, Usage: "power iterations per round of each low-rank matrix, warm-started from the last round's Q"},
			&cli.StringFlag{Name: "codec", Usage: "codec of the compressed modes: lowrank (default) or topk (the largest values of the model with their indices, under --target-ratio's budget)"},
			&cli.IntFlag{Name: "dense-every", Usage: "send the tensors that are not low-rank (biases) every N-th round in rotation, with all they accumulated (0 or 1: every round)"},
			&cli.IntFlag{Name: "block-size", Usage: "values sharing one quantisation scale, even, in [8, 4096] (a multiple of 4 with --factor-bits 2) (0: 64)"},
			&cli.IntFlag{Name: "fragments", Usage: "split the low-rank matrices into N groups sent in turn, one group a round at the whole byte budget, the others accumulating in error feedback (0 or 1: every matrix every round)"},
			&cli.IntFlag{Name: "shared-rank", Usage: "undelayed compressed mode: send each matrix as coordinates on up to N columns of a basis every node derives from the last aggregate, plus --rank-min private terms (0: off)"},
			&cli.IntFlag{Name: "shared-power-iters", Usage: "with --shared-rank: power iterations of each basis' derivation, -1 (none: two products of each matrix with a sketch of it) or 1 (three) (0: 1)"},
			&cli.IntFlag{Name: "min-low-rank", Value: compress.DefaultMinLowRank, Usage: "matrices with fewer elements are sent dense"},
			&cli.Float64Flag{Name: "target-ratio", Usage: "compressed modes: a byte budget this many times under dense fp32, ranks allocated across matrices by captured energy (0: adaptive rank per matrix)"},
			&cli.Float64Flag{Name: "first-budget", Usage: "with --target-ratio: the first message's budget as a multiple of the ratio's, repaid by the next messages (0: 1)"},
			&cli.IntFlag{Name: "eval", Usage: "validation and test samples to evaluate, each (0: task default)"},
			&cli.StringFlag{Name: "pareto", Usage: "comma-separated target ratios (e.g. 30,100,300,1000): allreduce and diloco once, then both compressed modes at each ratio's byte budget; test loss against bytes"},
			&cli.StringFlag{Name: "modes", Value: strings.Join(bench.TrainModes, ","), Usage: "comma-separated modes to run"},
			&cli.StringFlag{Name: "aggregation", Usage: "aggregation rule of the compressed modes: mean, trimmed_mean, median, centered_clip, norm_clip, filtered_mean (default: the recipe's)"},
			&cli.Float64Flag{Name: "trim", Value: 0.25, Usage: "trimmed_mean: fraction trimmed from each side"},
			&cli.StringFlag{Name: "adversaries", Usage: "KIND:N: the first N workers of the compressed modes send a statistical attack (" + strings.Join(node.StatisticalKinds, ", ") + ")"},
		},
		Action: runBenchTrain,
	}
}

func runBenchTrain(c *cli.Context) error {
	o, err := benchTrainOptions(c)
	if err != nil {
		return err
	}
	if c.String("pareto") != "" {
		return runBenchPareto(c, o)
	}
	logw := c.App.ErrWriter
	if !c.Bool("json") {
		logw = c.App.Writer
	}
	res, err := bench.RunTrain(c.Context, o, logw)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return writeJSON(c.App.Writer, res)
	}
	return res.WriteTable(c.App.Writer)
}

// benchTrainOptions turns the flags into options: the recipe from --spec (with the recipe
// flags set on the command line over it) or from the recipe flags alone, then the bench's
// own flags.
func benchTrainOptions(c *cli.Context) (bench.TrainOptions, error) {
	o := bench.DefaultTrainOptions(c.String("task"))
	if c.String("spec") != "" {
		var err error
		if o, err = benchSpecOptions(c); err != nil {
			return o, err
		}
		benchOnlyRecipeFlags(c, &o)
	} else {
		recipeFlags(c, &o)
	}
	o.Workers, o.Rounds, o.Seeds = c.Int("workers"), c.Int("rounds"), c.Int("seeds")
	if c.String("spec") == "" || c.IsSet("seed") {
		o.Seed = c.Uint64("seed")
	}
	if c.Int("eval") > 0 {
		o.EvalSamples = c.Int("eval")
	}
	o.Corpus, o.FMNISTDir = c.String("corpus"), c.String("fmnist-dir")
	o.OuterLR, o.Momentum = c.Float64("outer-lr"), c.Float64("momentum")
	o.DelayOuterLR, o.DelayMomentum = c.Float64("delay-outer-lr"), c.Float64("delay-momentum")
	o.Modes = strings.Split(c.String("modes"), ",")
	if m := c.String("aggregation"); m != "" {
		o.Aggregate = aggregate.Config{Method: aggregate.Method(m), Trim: c.Float64("trim")}
	}
	if a := c.String("adversaries"); a != "" {
		kind, n, ok := strings.Cut(a, ":")
		k, err := strconv.Atoi(n)
		if !ok || err != nil || k < 1 {
			return o, fmt.Errorf("--adversaries wants KIND:N, got %q", a)
		}
		o.Adversary, o.Adversaries = kind, k
	}
	return o, nil
}

// recipeFlags sets the recipe of a run without --spec from the flags.
func recipeFlags(c *cli.Context, o *bench.TrainOptions) {
	o.H = c.Int("inner-steps")
	if c.Int("batch") > 0 {
		o.Batch = c.Int("batch")
	}
	if h := c.IntSlice("hidden"); len(h) > 0 {
		o.Hidden = h
	}
	o.InnerLR = c.Float64("inner-lr")
	o.CompressOuterLR, o.CompressMomentum = c.Float64("compress-outer-lr"), c.Float64("compress-momentum")
	o.Compress.RankMin, o.Compress.RankMax = c.Int("rank-min"), c.Int("rank-max")
	o.Compress.FeedbackDecay, o.DelayStart = c.Float64("feedback-decay"), c.String("delay-start")
	o.Compress.MinLowRank, o.Compress.FactorBits = c.Int("min-low-rank"), c.Int("factor-bits")
	o.Compress.PowerIters, o.DelayMix = c.Int("power-iters"), c.Float64("delay-mix")
	o.StartResidual = c.Float64("start-residual")
	o.StartSent = c.Float64("start-sent")
	o.MergeStep = c.Int("merge-step")
	o.Compress.DenseEvery, o.Compress.Codec = c.Int("dense-every"), c.String("codec")
	o.Compress.Fragments = c.Int("fragments")
	if b := c.Int("block-size"); b != 0 {
		o.Compress.BlockSize = b
	}
	o.Compress.SharedRank, o.Compress.SharedPowerIters = c.Int("shared-rank"), c.Int("shared-power-iters")
	o.TargetRatio, o.FirstBudget = c.Float64("target-ratio"), c.Float64("first-budget")
}

// benchOnlyRecipeFlags sets, over a --spec recipe, the recipe flags set on the command line
// that a network spec has no field for, or whose zero the spec reads as its default.
func benchOnlyRecipeFlags(c *cli.Context, o *bench.TrainOptions) {
	if c.IsSet("start-residual") {
		o.StartResidual = c.Float64("start-residual")
	}
	if c.IsSet("start-sent") {
		o.StartSent = c.Float64("start-sent")
	}
	if c.IsSet("merge-step") {
		o.MergeStep = c.Int("merge-step")
	}
	if c.IsSet("codec") {
		o.Compress.Codec = c.String("codec")
	}
	if c.IsSet("fragments") {
		o.Compress.Fragments = c.Int("fragments")
	}
	if c.IsSet("shared-rank") {
		o.Compress.SharedRank = c.Int("shared-rank")
	}
	if c.IsSet("shared-power-iters") {
		o.Compress.SharedPowerIters = c.Int("shared-power-iters")
	}
}

// runBenchPareto runs --pareto: progress lines on stderr, the result on stdout.
func runBenchPareto(c *cli.Context, o bench.TrainOptions) error {
	var ratios []float64
	for _, f := range strings.Split(c.String("pareto"), ",") {
		r, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil {
			return fmt.Errorf("--pareto: %q is not a ratio", f)
		}
		ratios = append(ratios, r)
	}
	res, err := bench.RunPareto(c.Context, o, ratios, c.App.ErrWriter)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return writeJSON(c.App.Writer, res)
	}
	return res.WriteTable(c.App.Writer)
}
