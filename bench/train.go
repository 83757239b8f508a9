package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/lowband/lowband/training"
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

	Corpus    string // charlm text file; empty: Go's Opticks text in GOROOT
	FMNISTDir string // directory of the Fashion-MNIST .gz IDX files

	Context, Embed int
	Hidden         []int

	InnerLR, MinLR, Clip, WeightDecay float64
	Warmup                            int
	OuterLR, Momentum                 float64
	// CompressOuterLR and CompressMomentum are the outer settings of the two compressed
	// modes. Low-rank updates with error feedback, and even more so with the one-step delay,
	// are unstable under the dense defaults (0.7, 0.9).
	CompressOuterLR, CompressMomentum float64
	// DelayStart is the start point of the delayed mode's local work: round.StartGlobal
	// (empty) or round.StartEager.
	DelayStart string

	Compress  compress.Config
	Aggregate aggregate.Config

	EvalSamples int // held-out samples to evaluate on
	Modes       []string
}

// DefaultFMNISTDir is where Debian's dataset-fashion-mnist package installs the data.
const DefaultFMNISTDir = "/usr/share/datasets/fashion-mnist"

// DefaultTrainOptions returns the measured defaults for a task.
func DefaultTrainOptions(task string) TrainOptions {
	o := TrainOptions{
		Task: task, Workers: 8, Rounds: 12, H: 25, Batch: 32, Seed: 1,
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
	for _, p := range []struct{ v, d *int }{{&o.Workers, &d.Workers}, {&o.Rounds, &d.Rounds}, {&o.H, &d.H}, {&o.Batch, &d.Batch}, {&o.Context, &d.Context}, {&o.Embed, &d.Embed}, {&o.Warmup, &d.Warmup}, {&o.EvalSamples, &d.EvalSamples}} {
		setInt(p.v, *p.d)
	}
	for _, p := range []struct{ v, d *float64 }{{&o.InnerLR, &d.InnerLR}, {&o.MinLR, &d.MinLR}, {&o.Clip, &d.Clip}, {&o.WeightDecay, &d.WeightDecay}, {&o.OuterLR, &d.OuterLR}, {&o.CompressOuterLR, &d.CompressOuterLR}} {
		setF(p.v, *p.d)
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
	if o.Workers < 1 || o.Rounds < 1 || o.H < 1 || o.Batch < 1 {
		return errors.New("bench train: workers, rounds, h and batch must be positive")
	}
	for _, p := range [][2]float64{{o.OuterLR, o.Momentum}, {o.CompressOuterLR, o.CompressMomentum}} {
		if !(p[0] > 0 && p[0] <= 10) || !(p[1] >= 0 && p[1] < 1) {
			return fmt.Errorf("bench train: outer lr %v not in (0, 10] or outer momentum %v not in [0, 1)", p[0], p[1])
		}
	}
	return nil
}

// TrainResult is the JSON object `lowband bench train --json` prints.
type TrainResult struct {
	Task    string       `json:"task"`
	Workers int          `json:"workers"`
	Rounds  int          `json:"rounds"`
	H       int          `json:"h"`
	Batch   int          `json:"batch"`
	Params  int          `json:"params"`
	Modes   []ModeResult `json:"modes"`
}

// ModeResult is one mode's measurements.
type ModeResult struct {
	Name     string   `json:"name"`
	EvalLoss float64  `json:"eval_loss"`
	EvalAcc  *float64 `json:"eval_accuracy,omitempty"`
	// BytesPerRound is what one worker sends per round (allreduce: a dense fp32 gradient
	// every inner step).
	BytesPerRound float64 `json:"bytes_per_round"`
	// BytesTotal is what all workers send over the whole run.
	BytesTotal float64 `json:"bytes_total"`
	// CompressionRatio is dense fp32 pseudo-gradient bytes over BytesPerRound.
	CompressionRatio float64 `json:"compression_ratio"`
	// CompressShare is the share of the mode's CPU time spent compressing and decoding, all
	// workers together: encoding pseudo-gradients and cutting them into shards; parsing and
	// joining received shards and reconstructing every contribution's dense parameter vector
	// (including its own). 0 for the dense modes.
	CompressShare float64 `json:"compress_share"`
	// AggregateShare is the share of the mode's CPU time spent combining the contributions
	// and in the outer step (dense diloco: also forming the pseudo-gradients).
	AggregateShare float64 `json:"aggregate_share"`
	TokensPerS     float64 `json:"tokens_per_s"`
	Seconds        float64 `json:"seconds"`
	// Agree is true when every simulated node ended with byte-identical parameters.
	Agree bool `json:"nodes_agree"`
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
	res := &TrainResult{Task: opt.Task, Workers: opt.Workers, Rounds: opt.Rounds, H: opt.H, Batch: opt.Batch, Params: tk.params}
	for _, name := range opt.Modes {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		start := time.Now()
		mr, err := runMode(ctx, name, opt, tk)
		if err != nil {
			return nil, fmt.Errorf("mode %s: %w", name, err)
		}
		fmt.Fprintf(logw, "%s: eval loss %.4f in %s\n", name, mr.EvalLoss, time.Since(start).Round(time.Millisecond))
		res.Modes = append(res.Modes, *mr)
	}
	return res, nil
}

// task is the data and model factory of one benchmark run.
type task struct {
	train    training.Dataset
	eval     training.Batch
	slices   [][]int
	newModel func() (training.Model, error)
	params   int
	accuracy bool
}

func loadTask(opt TrainOptions) (*task, error) {
	var tk *task
	var err error
	switch opt.Task {
	case "charlm":
		tk, err = loadCharLM(opt)
	case "fmnist":
		tk, err = loadFMNIST(opt)
	default:
		return nil, fmt.Errorf("bench train: unknown task %q (want charlm or fmnist)", opt.Task)
	}
	if err != nil {
		return nil, err
	}
	for w := 0; w < opt.Workers; w++ {
		idx, err := training.NodeSlice(tk.train.Len(), opt.Seed, w, opt.Workers)
		if err != nil {
			return nil, err
		}
		tk.slices = append(tk.slices, idx)
	}
	m, err := tk.newModel()
	if err != nil {
		return nil, err
	}
	tk.params = training.NumParams(m.Params())
	return tk, nil
}

// DefaultCorpus is the path of Go's copy of Newton's Opticks, the default charlm corpus.
func DefaultCorpus() string {
	root := os.Getenv("GOROOT")
	if root == "" {
		root = runtime.GOROOT() //nolint:staticcheck // the build's GOROOT is the best default
	}
	return filepath.Join(root, "src", "testdata", "Isaac.Newton-Opticks.txt")
}

func loadCharLM(opt TrainOptions) (*task, error) {
	path := opt.Corpus
	if path == "" {
		path = DefaultCorpus()
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("bench train: corpus: %w", err)
	}
	defer f.Close()
	c, err := training.NewCorpus(f, 64<<20)
	if err != nil {
		return nil, err
	}
	train, held, err := c.Windows(opt.Context, 0.1)
	if err != nil {
		return nil, err
	}
	size := training.CharLMSize{Vocab: len(c.Vocab), Context: opt.Context, Embed: opt.Embed, Hidden: opt.Hidden}
	return &task{
		train: train,
		eval:  held.Batch(evalIndex(held.Len(), opt.EvalSamples, opt.Seed)),
		newModel: func() (training.Model, error) {
			return training.NewCharLM(size, rand.New(rand.NewPCG(opt.Seed, 0)))
		},
	}, nil
}

func loadFMNIST(opt TrainOptions) (*task, error) {
	open := func(name string) (*training.ImageData, error) {
		im, err := os.Open(filepath.Join(opt.FMNISTDir, name+"-images-idx3-ubyte.gz"))
		if err != nil {
			return nil, fmt.Errorf("bench train: %w (install dataset-fashion-mnist or pass --fmnist-dir)", err)
		}
		defer im.Close()
		lb, err := os.Open(filepath.Join(opt.FMNISTDir, name+"-labels-idx1-ubyte.gz"))
		if err != nil {
			return nil, fmt.Errorf("bench train: %w", err)
		}
		defer lb.Close()
		return training.NewImageData(im, lb, 10)
	}
	train, err := open("train")
	if err != nil {
		return nil, err
	}
	test, err := open("t10k")
	if err != nil {
		return nil, err
	}
	return &task{
		train: train, accuracy: true,
		eval: test.Batch(evalIndex(test.Len(), opt.EvalSamples, opt.Seed)),
		newModel: func() (training.Model, error) {
			return training.NewClassifier(train.Pixels, opt.Hidden, 10, rand.New(rand.NewPCG(opt.Seed, 0)))
		},
	}, nil
}

// evalIndex picks n held-out samples (all of them when n >= total), deterministically.
func evalIndex(total, n int, seed uint64) []int {
	if n >= total {
		return training.Range(0, total)
	}
	idx := rand.New(rand.NewPCG(seed, 0x6576616c)).Perm(total)[:n]
	slices.Sort(idx)
	return idx
}

// WriteTable prints r as a readable table.
func (r *TrainResult) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "task %s: %d workers, %d rounds of H=%d, batch %d, %d parameters\n", r.Task, r.Workers, r.Rounds, r.H, r.Batch, r.Params)
	fmt.Fprintf(w, "%-23s %9s %8s %14s %10s %9s %8s %10s %6s\n", "mode", "eval_loss", "eval_acc", "bytes/round", "ratio", "compress%", "agg%", "tokens/s", "agree")
	for _, m := range r.Modes {
		acc := "-"
		if m.EvalAcc != nil {
			acc = fmt.Sprintf("%.4f", *m.EvalAcc)
		}
		if _, err := fmt.Fprintf(w, "%-23s %9.4f %8s %14.0f %9.1fx %8.2f%% %7.2f%% %10.0f %6v\n", m.Name, m.EvalLoss, acc, m.BytesPerRound, m.CompressionRatio, 100*m.CompressShare, 100*m.AggregateShare, m.TokensPerS, m.Agree); err != nil {
			return err
		}
	}
	return nil
}
