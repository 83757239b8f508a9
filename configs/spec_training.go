package configs

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// Training tasks a network can run.
const (
	TaskCharLM    = "charlm"    // character-level language model on a text corpus
	TaskFMNIST    = "fmnist"    // MLP classifier on Fashion-MNIST
	TaskSynthetic = "synthetic" // tiny teacher task, for tests
)

// Tasks lists the task names in a stable order.
var Tasks = []string{TaskCharLM, TaskFMNIST, TaskSynthetic}

// Aggregation methods (the names of package training/aggregate).
var AggregationMethods = []string{"mean", "trimmed_mean", "median", "centered_clip", "norm_clip", "filtered_mean"}

// TrainingSpec is the network's model and training recipe. Every node trains the same model
// with the same recipe; only the data slice differs.
type TrainingSpec struct {
	// Task names the model and data: "charlm", "fmnist" or "synthetic".
	Task string `toml:"task" cbor:"1,keyasint"`
	// Seed draws the initial weights and deals the data slices.
	Seed uint64 `toml:"seed" cbor:"2,keyasint"`
	// Context is the number of characters the language model sees (charlm only).
	Context int `toml:"context" cbor:"3,keyasint"`
	// Embed is the character embedding width (charlm only).
	Embed int `toml:"embed" cbor:"4,keyasint"`
	// Hidden lists the widths of the hidden layers.
	Hidden []int `toml:"hidden" cbor:"5,keyasint"`
	// BatchSize is the number of samples per inner step.
	BatchSize int `toml:"batch_size" cbor:"6,keyasint"`
	// InnerSteps is H, the number of inner steps per round.
	InnerSteps int `toml:"inner_steps" cbor:"7,keyasint"`

	Inner       InnerOptSpec    `toml:"inner" cbor:"8,keyasint"`
	Outer       OuterOptSpec    `toml:"outer" cbor:"9,keyasint"`
	Compression CompressionSpec `toml:"compression" cbor:"10,keyasint"`
	Aggregation AggregationSpec `toml:"aggregation" cbor:"11,keyasint"`

	// SliceFraction is the share of the training set each peer trains on, in (0, 1]: its
	// slice is that fraction of the data's chunks, chosen by a hash of the seed and its peer
	// ID (training.PeerSlice). 0 means DefaultSliceFraction.
	SliceFraction float64 `toml:"slice_fraction" cbor:"12,keyasint,omitempty"`
}

// DefaultSliceFraction is the slice fraction of a spec that sets none. A peer holds and
// trains on a quarter of the data; two peers share a quarter of their slices in
// expectation; 4 peers cover 68% of the data set (1 − 0.75⁴), 16 peers 99%.
const DefaultSliceFraction = 0.25

// InnerOptSpec is the inner optimizer: AdamW, gradient clipping, warmup + cosine schedule.
type InnerOptSpec struct {
	LR          float64 `toml:"lr" cbor:"1,keyasint"`
	MinLR       float64 `toml:"min_lr" cbor:"2,keyasint"`
	Warmup      int     `toml:"warmup_steps" cbor:"3,keyasint"`
	TotalSteps  int     `toml:"total_steps" cbor:"4,keyasint"`
	Clip        float64 `toml:"clip" cbor:"5,keyasint"`
	WeightDecay float64 `toml:"weight_decay" cbor:"6,keyasint"`
}

// Start points of local work (OuterOptSpec.Start; the names of package training/round).
const (
	StartGlobal = "global" // from the global parameters
	StartEager  = "eager"  // plus the node's own pseudo-gradient not yet aggregated
)

// OuterOptSpec is the outer optimizer: SGD with Nesterov momentum on pseudo-gradients
// (momentum 0 is plain SGD), the one-step delay, and where each node starts its local work
// under the delay.
type OuterOptSpec struct {
	LR       float64 `toml:"lr" cbor:"1,keyasint"`
	Momentum float64 `toml:"momentum" cbor:"2,keyasint"`
	// Start is "global" (empty means global) or "eager".
	Start string `toml:"start" cbor:"3,keyasint,omitempty"`
	// Delay is 1 (round t closes while round t+1's local work runs, so compute never
	// waits for the network) or 0 (round t closes before round t+1's local work starts).
	// Unset means 1; read it with Delayed.
	Delay *int `toml:"delay" cbor:"4,keyasint,omitempty"`
	// StartMix, with start "eager", is the weight in [0, 1] of a node's own last
	// pseudo-gradient in its start point (θ − start_mix·own, Streaming DiLoCo's mix of local
	// and global parameters); 0 is the eager update (lr times the node's share). It moves
	// only each node's private start, never θ.
	StartMix float64 `toml:"start_mix" cbor:"5,keyasint,omitempty"`
	// StartResidual is the weight in [0, 1] of a node's error-feedback residual (what its
	// messages have not yet delivered) subtracted from its start point, with either start;
	// 0 is none. Like start_mix it moves only each node's private start, never θ.
	StartResidual float64 `toml:"start_residual" cbor:"6,keyasint,omitempty"`
	// Merge, with delay 1, lets a node close a round as soon as it may while its next
	// round's local work runs, and moves that work to θ after the round
	// (round.Config.Merge): the delay's staleness falls from a round of local work to the
	// steps before the close. It moves only each node's private start, never θ. On in the
	// default recipe (measured by lowband bench train --merge-step and bench swarm, README);
	// a spec that sets the outer section sets it too (unset is off).
	Merge bool `toml:"merge" cbor:"7,keyasint,omitempty"`
}

// DefaultDelay is the one-step delay a spec gets when it does not set outer.delay.
const DefaultDelay = 1

// Delayed is the spec's delay in rounds: Delay, or DefaultDelay when it is unset.
func (o OuterOptSpec) Delayed() int {
	if o.Delay == nil {
		return DefaultDelay
	}
	return *o.Delay
}

// CompressionSpec configures the pseudo-gradient codec (package training/compress).
type CompressionSpec struct {
	RankMin       int     `toml:"rank_min" cbor:"1,keyasint"`
	RankMax       int     `toml:"rank_max" cbor:"2,keyasint"`
	EnergyTarget  float64 `toml:"energy_target" cbor:"3,keyasint"`
	PowerIters    int     `toml:"power_iters" cbor:"4,keyasint"`
	BlockSize     int     `toml:"block_size" cbor:"5,keyasint"`
	MinLowRank    int     `toml:"min_low_rank" cbor:"6,keyasint"`
	MaxShardBytes int     `toml:"max_shard_bytes" cbor:"7,keyasint"`
	DenseBits     int     `toml:"dense_bits" cbor:"8,keyasint"`
	// FeedbackDecay scales the error-feedback residual every round, in (0, 1]; 0 means 1
	// (no decay).
	FeedbackDecay float64 `toml:"feedback_decay" cbor:"9,keyasint,omitempty"`
	// MaxNorm bounds the L2 norm of what one shard reconstructs to; a shard over it fails
	// the content check. 0 means DefaultMaxNorm.
	MaxNorm float64 `toml:"max_norm" cbor:"10,keyasint,omitempty"`
	// FactorBits is the code width of low-rank factors: 4 or 2 (twice the rank at equal
	// bytes; block_size must then be a multiple of 4). 0 means 4.
	FactorBits int `toml:"factor_bits" cbor:"11,keyasint,omitempty"`
	// TargetRatio, when above 0, gives every message a byte budget about TargetRatio times
	// under the model's dense fp32 size, the ranks allocated across the matrices by
	// captured energy per byte within [rank_min, rank_max]; 0 keeps the adaptive rank of
	// each matrix (energy_target).
	TargetRatio float64 `toml:"target_ratio" cbor:"12,keyasint,omitempty"`
	// FirstBudget, with target_ratio, is a node's first message's byte budget as a multiple
	// of the ratio's, in [1, 16]; the messages after it repay the extra bytes, so that the
	// average over a run stays within the ratio once they are repaid. 0 means 1.
	FirstBudget float64 `toml:"first_budget" cbor:"13,keyasint,omitempty"`
	// DenseEvery, above 1, sends the tensors that are not low-rank (biases and other small
	// tensors) only every dense_every-th round, in rotation (compress.Config.Due), each
	// with all it accumulated meanwhile, so that the byte budget goes to the matrices; a
	// tensor a message does not carry counts as zero in that round's aggregate. In
	// [0, 64]; 0 and 1 send every tensor in every round.
	DenseEvery int `toml:"dense_every" cbor:"14,keyasint,omitempty"`
	// SharedRank, above 0, sends each matrix with at least as many rows as columns as
	// coordinates on up to shared_rank directions of a basis every node derives from the
	// last round's aggregate (compress.DeriveBases of the outer momentum buffer), columns
	// values per direction instead of rows plus columns, besides rank_min private low-rank
	// terms (more when the budget outlasts the basis); a matrix's private and shared ranks
	// together stay within rank_max. It needs the outer step without the delay (outer.delay
	// 0). In [0, 64]; 0 is off. It is compress.Config.SharedRank, measured by lowband bench
	// train only: a node refuses a spec that sets it (node.NewParams), and shared
	// coordinates from peers (compress.Limits.NoShared).
	SharedRank int `toml:"shared_rank" cbor:"15,keyasint,omitempty"`
	// SharedPowerIters, with shared_rank, is the number of power iterations of each
	// basis' derivation (compress.Config.SharedPowerIters): 0 means 1 (three products of
	// each matrix with a sketch of shared_rank + 8 columns), -1 none (two products: the
	// matrix's range seen through the sketch, the whole range when the aggregate has
	// fewer directions than the sketch, as at momentum 0 it mostly has). In [-1, 1].
	SharedPowerIters int `toml:"shared_power_iters" cbor:"16,keyasint,omitempty"`
}

// DefaultMaxNorm is the shard norm bound of a spec that sets none: a sanity bound, far above
// what honest nodes send. Measured with `lowband bench train` (4 workers, 40 rounds, the
// delayed compressed mode of the default recipe), the largest shard norm was 8.6 on charlm
// and 12.1 on fmnist (both in the first rounds), a margin of over 80x. Even a dense
// pseudo-gradient whose every value moved by the peak inner lr at each of the H steps
// (charlm: 25 x 2e-3 x sqrt(1.45M), about 60) stays well below it.
const DefaultMaxNorm = 1000

// MaxMaxNorm bounds max_norm. The aggregate of up to incentives.MaxContributions
// contributions, each of norm at most max_norm, then stays far inside float64's range, so a
// peer's extreme values can never overflow a round's aggregate and stop every node's close.
const MaxMaxNorm = 1e9

// AggregationSpec configures robust aggregation (package training/aggregate).
type AggregationSpec struct {
	Method string  `toml:"method" cbor:"1,keyasint"`
	Trim   float64 `toml:"trim" cbor:"2,keyasint"`
	Tau    float64 `toml:"tau" cbor:"3,keyasint"`
	Iters  int     `toml:"iters" cbor:"4,keyasint"`
}

// DefaultTrainingSpec is the recipe of the default network: the character-level language
// model (about 1.45M parameters) with the settings `lowband bench train` measured best at a
// 1000x byte budget with the one-step delay (README, "Benchmarks"): messages 1000 times
// under dense fp32 (target_ratio), ranks allocated across the matrices, 2-bit factors (twice
// the rank of 4-bit ones at equal bytes), two warm-started power iterations a round, error
// feedback kept whole (feedback_decay 1), the eager start with each node's own
// pseudo-gradient weighed 0.5 (start_mix) and its error-feedback residual 0.25
// (start_residual), each round closed during the next round's work (merge), and plain
// outer SGD at lr 0.7. Decay 1 and start_residual 0.25 against
// decay 0.95 and none, at 1000x, 48 rounds, 3 seeds, delayed (4 workers, H 5): test loss
// 0.4800 against 0.4914 on fmnist and 2.4550 against 2.5063 on charlm, lower on every seed;
// then lr 1 and start_residual 0.5 against lr 0.7 and 0.25, the same runs: 0.4648 on fmnist
// and 2.4214 on charlm, lower on every seed; then lr 1.2 and start_residual 0.6: 0.4612 on
// fmnist (lower on every seed) and 2.4202 on charlm (lower on two seeds of three; lr 1.4
// and 0.7 gave 0.4608 and 2.4257). Those ran at 4 workers and H 5; the default network runs
// H 25 with more nodes, and there (`lowband bench swarm --nodes 16 --rounds 32 --task
// charlm`, one run each) lr 1.2 and 0.6 ended at 2.397 against 2.201 with lr 0.7 and 0.25,
// so the defaults stay at the latter until the new ones are measured at the network's
// settings. merge (a round closes during the next round's local work, which moves to θ
// after it) lowered the delayed mode's test loss at 1000x, 48 rounds, 3 seeds, 4 workers,
// H 5, on every seed: fmnist 0.4729 against 0.4800 at lr 0.7, 0.4502 against 0.4612 at
// lr 1.2, charlm 2.4030 against 2.4202 at lr 1.2; at the network's settings (16 workers,
// H 25, 32 rounds, one seed) 2.2306 against 2.2656, and in a 16-node swarm (`lowband bench
// swarm --nodes 16 --rounds 32 --task charlm --link-mbps 100 --latency-ms 50`, one run
// each) 2.151 against 2.201, at 100.5x under the ring all-reduce's bytes (README). Before those (decay 0.95, no residual in
// the start, every tensor every round), on fmnist (4 workers, H 5, 24 rounds, one seed,
// validation loss) the delayed mode gave 0.577 at lr 0.7, 0.594 at lr 0.5, 0.630 at 0.35
// and 0.658 at 1; at lr 0.35, 0.650, 0.633, 0.630, 0.646 and 0.688 with the
// mixes 0 (the eager update), 0.25, 0.5, 0.7 and 1. Two power iterations gave 0.595
// undelayed (lr 0.5) against 0.620 with one (three: 0.593); 2-bit factors beat 4-bit ones by
// 11% (0.54 against 0.61, undelayed, H 10). min_low_rank 1024 lets fmnist's 256x10 output
// layer go low-rank, so that the budget holds. dense_every 8 sends the biases every eighth
// round, in rotation, so that their bytes go to the matrices: delayed, 24 rounds, one seed,
// validation loss, fmnist 0.577 every round, 0.568 every 2nd, 0.569 every 4th, 0.565 every
// 8th, 0.565 every 16th, 0.569 every 32nd; charlm (H 5) 2.667 every round, 2.655 every
// 8th, 2.660 every 16th. Aggregation is filtered_mean: with a third of
// 12 nodes attacking (`lowband bench swarm --nodes 12 --rounds 6 --task synthetic
// --adversaries K,K,K,K`), its loss was within 1.2% of its clean run for every statistical
// kind (sign-flip, scaled, noise, alie, ipm), where mean lost up to 14.4%, median and the
// trimmed mean up to 2.8%, centered clipping 4.7% and norm clipping 13%; with no outlying
// input it is the plain mean, bit for bit.
func DefaultTrainingSpec() TrainingSpec {
	return TrainingSpec{
		Task: TaskCharLM, Seed: 1, Context: 16, Embed: 64, Hidden: []int{768, 768},
		BatchSize: 32, InnerSteps: 25,
		Inner: InnerOptSpec{LR: 2e-3, MinLR: 2e-4, Warmup: 25, TotalSteps: 20000, Clip: 1, WeightDecay: 0.01},
		Outer: OuterOptSpec{LR: 0.7, Momentum: 0, Start: StartEager, Delay: ptr(DefaultDelay), StartMix: 0.5, StartResidual: 0.25, Merge: true},
		Compression: CompressionSpec{RankMin: 1, RankMax: 16, EnergyTarget: 0.5, PowerIters: 2, BlockSize: 64, MinLowRank: 1024,
			MaxShardBytes: 256 << 10, DenseBits: 4, FactorBits: 2, FeedbackDecay: 1, TargetRatio: 1000, MaxNorm: DefaultMaxNorm,
			DenseEvery: 8},
		Aggregation:   AggregationSpec{Method: "filtered_mean"},
		SliceFraction: DefaultSliceFraction,
	}
}

func ptr[T any](v T) *T { return &v }

func keyErr(key, format string, a ...any) error {
	return &KeyError{Key: key, Err: fmt.Errorf(format, a...)}
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// DefaultTrainingSpecFor is the default recipe of a task (charlm as DefaultTrainingSpec;
// fmnist and synthetic with smaller classifiers). It returns the charlm recipe with the
// task's name for an unknown task.
func DefaultTrainingSpecFor(task string) TrainingSpec {
	d := DefaultTrainingSpec()
	d.Task = task
	switch task {
	case TaskFMNIST:
		d.Context, d.Embed, d.Hidden, d.BatchSize = 0, 0, []int{512, 256}, 64
	case TaskSynthetic: // too small for a 1000x budget: adaptive ranks, every tensor every round
		d.Context, d.Embed, d.Hidden, d.BatchSize, d.InnerSteps = 0, 0, []int{16}, 16, 10
		d.Compression.TargetRatio, d.Compression.DenseEvery = 0, 0
	}
	return d
}

// fill sets every zero field to the task's default, so that a spec may name only what it
// changes. Zero is never a meaningful setting for these fields, except where noted in
// validate (min_lr, warmup_steps, clip, weight_decay, momentum, trim, tau, iters keep 0).
func (t *TrainingSpec) fill() {
	d := DefaultTrainingSpecFor(t.Task)
	fillInt := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	if t.Seed == 0 {
		t.Seed = d.Seed
	}
	fillInt(&t.Context, d.Context)
	fillInt(&t.Embed, d.Embed)
	if len(t.Hidden) == 0 {
		t.Hidden = d.Hidden
	}
	fillInt(&t.BatchSize, d.BatchSize)
	fillInt(&t.InnerSteps, d.InnerSteps)
	if t.Inner == (InnerOptSpec{}) {
		t.Inner = d.Inner
	}
	if t.Outer.LR == 0 && t.Outer.Momentum == 0 && t.Outer.Start == "" {
		t.Outer.LR, t.Outer.Momentum, t.Outer.Start = d.Outer.LR, d.Outer.Momentum, d.Outer.Start
		if t.Outer.StartMix == 0 {
			t.Outer.StartMix = d.Outer.StartMix
		}
		if t.Outer.StartResidual == 0 {
			t.Outer.StartResidual = d.Outer.StartResidual
		}
		t.Outer.Merge = d.Outer.Merge
		if t.Outer.Delay != nil && *t.Outer.Delay == 0 { // the eager start and the merge need the delay
			t.Outer.Start, t.Outer.StartMix, t.Outer.Merge = StartGlobal, 0, false
		}
	}
	if t.Outer.Delay == nil {
		t.Outer.Delay = ptr(DefaultDelay)
	}
	if c := t.Compression; c.withoutBounds() == (CompressionSpec{}) {
		t.Compression = d.Compression
		for _, f := range []struct{ v, d *float64 }{{&c.FeedbackDecay, &t.Compression.FeedbackDecay}, {&c.MaxNorm, &t.Compression.MaxNorm}, {&c.TargetRatio, &t.Compression.TargetRatio}, {&c.FirstBudget, &t.Compression.FirstBudget}} {
			if *f.v != 0 {
				*f.d = *f.v
			}
		}
		if c.FactorBits != 0 {
			t.Compression.FactorBits = c.FactorBits
		}
		if c.DenseEvery != 0 {
			t.Compression.DenseEvery = c.DenseEvery
		}
		t.Compression.SharedRank, t.Compression.SharedPowerIters = c.SharedRank, c.SharedPowerIters
	}
	if t.Compression.FeedbackDecay == 0 {
		t.Compression.FeedbackDecay = 1
	}
	if t.Compression.MaxNorm == 0 {
		t.Compression.MaxNorm = DefaultMaxNorm
	}
	if t.Compression.FactorBits == 0 {
		t.Compression.FactorBits = 4
	}
	if t.Outer.Start == "" {
		t.Outer.Start = StartGlobal
	}
	if t.SliceFraction == 0 {
		t.SliceFraction = DefaultSliceFraction
	}
	if t.Aggregation == (AggregationSpec{}) {
		t.Aggregation = d.Aggregation
	}
}

// validate fills defaults (an empty task is charlm; see fill) and checks every field.
func (t *TrainingSpec) validate() error {
	if t.Task == "" {
		t.Task = TaskCharLM
	}
	if !slices.Contains(Tasks, t.Task) {
		return keyErr("task", "unknown task %q (want one of %v)", t.Task, Tasks)
	}
	t.fill()
	if t.Task == TaskCharLM && (t.Context < 1 || t.Context > 1024) {
		return keyErr("context", "%d not in [1, 1024]", t.Context)
	}
	if t.Task == TaskCharLM && (t.Embed < 1 || t.Embed > 4096) {
		return keyErr("embed", "%d not in [1, 4096]", t.Embed)
	}
	if len(t.Hidden) < 1 || len(t.Hidden) > 16 {
		return keyErr("hidden", "want 1 to 16 hidden layers, have %d", len(t.Hidden))
	}
	for i, h := range t.Hidden {
		if h < 1 || h > 16384 {
			return keyErr(fmt.Sprintf("hidden[%d]", i), "%d not in [1, 16384]", h)
		}
	}
	if t.BatchSize < 1 || t.BatchSize > 1<<16 {
		return keyErr("batch_size", "%d not in [1, 65536]", t.BatchSize)
	}
	if t.InnerSteps < 1 || t.InnerSteps > 1<<20 {
		return keyErr("inner_steps", "%d not in [1, 1048576]", t.InnerSteps)
	}
	if !(t.SliceFraction > 0 && t.SliceFraction <= 1) {
		return keyErr("slice_fraction", "%v not in (0, 1]", t.SliceFraction)
	}
	for _, sub := range []struct {
		key string
		err error
	}{{"inner", t.Inner.validate()}, {"outer", t.Outer.validate()}, {"compression", t.Compression.validate()}, {"aggregation", t.Aggregation.validate()}} {
		if sub.err != nil {
			return prefixKey(sub.key, sub.err)
		}
	}
	if t.Compression.SharedRank > 0 && t.Outer.Delayed() != 0 {
		return keyErr("compression.shared_rank", "%d needs outer.delay 0: a delayed node encodes before the aggregate its basis comes from", t.Compression.SharedRank)
	}
	return nil
}

func (o *InnerOptSpec) validate() error {
	switch {
	case !finite(o.LR) || o.LR <= 0 || o.LR > 1:
		return keyErr("lr", "%v not in (0, 1]", o.LR)
	case !finite(o.MinLR) || o.MinLR < 0 || o.MinLR > o.LR:
		return keyErr("min_lr", "%v not in [0, lr]", o.MinLR)
	case o.Warmup < 0:
		return keyErr("warmup_steps", "%d is negative", o.Warmup)
	case o.TotalSteps < o.Warmup:
		return keyErr("total_steps", "%d is below warmup_steps %d", o.TotalSteps, o.Warmup)
	case !finite(o.Clip) || o.Clip < 0:
		return keyErr("clip", "%v is negative (0 turns clipping off)", o.Clip)
	case !finite(o.WeightDecay) || o.WeightDecay < 0 || o.WeightDecay >= 1:
		return keyErr("weight_decay", "%v not in [0, 1)", o.WeightDecay)
	}
	return nil
}

func (o *OuterOptSpec) validate() error {
	if !finite(o.LR) || o.LR <= 0 || o.LR > 10 {
		return keyErr("lr", "%v not in (0, 10]", o.LR)
	}
	if !finite(o.Momentum) || o.Momentum < 0 || o.Momentum >= 1 {
		return keyErr("momentum", "%v not in [0, 1)", o.Momentum)
	}
	if o.Start != StartGlobal && o.Start != StartEager {
		return keyErr("start", "%q: want %q or %q", o.Start, StartGlobal, StartEager)
	}
	if d := o.Delayed(); d != 0 && d != 1 {
		return keyErr("delay", "%d: want 0 or 1", d)
	}
	if o.Start == StartEager && o.Delayed() == 0 {
		return keyErr("start", "%q needs delay 1", o.Start)
	}
	if !finite(o.StartMix) || o.StartMix < 0 || o.StartMix > 1 || o.StartMix > 0 && o.Start != StartEager {
		return keyErr("start_mix", "%v: want 0, or a weight in (0, 1] with start %q", o.StartMix, StartEager)
	}
	if !finite(o.StartResidual) || o.StartResidual < 0 || o.StartResidual > 1 {
		return keyErr("start_residual", "%v: want a weight in [0, 1]", o.StartResidual)
	}
	if o.Merge && o.Delayed() != 1 {
		return keyErr("merge", "needs delay 1")
	}
	return nil
}

// withoutBounds is c without the fields added after the first spec (feedback_decay,
// max_norm, factor_bits, target_ratio, first_budget, dense_every, shared_rank,
// shared_power_iters), which fill on their own.
func (c CompressionSpec) withoutBounds() CompressionSpec {
	c.FeedbackDecay, c.MaxNorm, c.FactorBits, c.TargetRatio, c.FirstBudget, c.DenseEvery = 0, 0, 0, 0, 0, 0
	c.SharedRank, c.SharedPowerIters = 0, 0
	return c
}

func (c *CompressionSpec) validate() error {
	switch {
	case c.RankMin < 1 || c.RankMax < c.RankMin || c.RankMax > 1024:
		return keyErr("rank_max", "want 1 <= rank_min (%d) <= rank_max (%d) <= 1024", c.RankMin, c.RankMax)
	case !finite(c.EnergyTarget) || c.EnergyTarget <= 0 || c.EnergyTarget > 1:
		return keyErr("energy_target", "%v not in (0, 1]", c.EnergyTarget)
	case c.PowerIters < 1 || c.PowerIters > 16:
		return keyErr("power_iters", "%d not in [1, 16]", c.PowerIters)
	case c.BlockSize < 8 || c.BlockSize > 4096 || c.BlockSize%2 != 0:
		return keyErr("block_size", "%d: want even, in [8, 4096]", c.BlockSize)
	case c.MinLowRank < 4:
		return keyErr("min_low_rank", "%d is below 4", c.MinLowRank)
	case c.MaxShardBytes < 4<<10 || c.MaxShardBytes > 512<<10:
		return keyErr("max_shard_bytes", "%d not in [4096, 524288]", c.MaxShardBytes)
	case c.DenseBits != 4 && c.DenseBits != 8:
		return keyErr("dense_bits", "%d: want 4 or 8", c.DenseBits)
	case c.FactorBits != 4 && c.FactorBits != 2:
		return keyErr("factor_bits", "%d: want 4 or 2", c.FactorBits)
	case c.FactorBits == 2 && c.BlockSize%4 != 0:
		return keyErr("factor_bits", "2 needs block_size a multiple of 4, have %d", c.BlockSize)
	case !finite(c.FeedbackDecay) || c.FeedbackDecay <= 0 || c.FeedbackDecay > 1:
		return keyErr("feedback_decay", "%v not in (0, 1]", c.FeedbackDecay)
	case !finite(c.TargetRatio) || c.TargetRatio != 0 && (c.TargetRatio < 1 || c.TargetRatio > 1e6):
		return keyErr("target_ratio", "%v: want 0 (none) or a ratio in [1, 1e6]", c.TargetRatio)
	case !finite(c.FirstBudget) || c.FirstBudget != 0 && (c.FirstBudget < 1 || c.FirstBudget > 16):
		return keyErr("first_budget", "%v: want 0 (none) or a multiple in [1, 16]", c.FirstBudget)
	case c.DenseEvery < 0 || c.DenseEvery > 64:
		return keyErr("dense_every", "%d not in [0, 64]", c.DenseEvery)
	case c.SharedRank < 0 || c.SharedRank > 64:
		return keyErr("shared_rank", "%d not in [0, 64]", c.SharedRank)
	case c.SharedPowerIters < -1 || c.SharedPowerIters > 1 || c.SharedPowerIters != 0 && c.SharedRank == 0:
		return keyErr("shared_power_iters", "%d: want -1 (none), 0 or 1 (one), with shared_rank above 0", c.SharedPowerIters)
	case !finite(c.MaxNorm) || c.MaxNorm <= 0 || c.MaxNorm > MaxMaxNorm:
		return keyErr("max_norm", "%v: want a positive number at most %g", c.MaxNorm, float64(MaxMaxNorm))
	}
	return nil
}

func (a *AggregationSpec) validate() error {
	if !slices.Contains(AggregationMethods, a.Method) {
		return keyErr("method", "unknown method %q (want one of %v)", a.Method, AggregationMethods)
	}
	if !finite(a.Trim) || a.Trim < 0 || a.Trim >= 0.5 {
		return keyErr("trim", "%v not in [0, 0.5)", a.Trim)
	}
	if !finite(a.Tau) || a.Tau < 0 {
		return keyErr("tau", "%v is negative", a.Tau)
	}
	if a.Iters < 0 || a.Iters > 100 {
		return keyErr("iters", "%d not in [0, 100]", a.Iters)
	}
	return nil
}

var errNoData = errors.New("not a usable path")
