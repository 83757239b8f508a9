package bench

import (
	"github.com/lowband/lowband/node"
	"github.com/lowband/lowband/training"
	"github.com/lowband/lowband/training/compress"
)

// FromSpec returns the options that make `bench train` run what a network of p runs: its
// task, model (node.Params.NewModel: charlm with the network's 256-token vocabulary), batch,
// H, inner optimizer and schedule length, and for the compressed modes the round
// configuration of node.Params.RoundConfig (outer step, start point, codec, aggregation,
// norm bound) and the shard limits and content check of its validators. The seed is the
// spec's. The dense modes keep the bench's dense DiLoCo outer step: the spec has one outer
// step, for the compressed network. Callers may change the bench's own fields afterwards
// (workers, rounds, seeds, modes, target ratio); settings of the recipe belong in the spec.
func FromSpec(p *node.Params) TrainOptions {
	t := p.Training
	o := DefaultTrainOptions(t.Task)
	rc := p.RoundConfig(peerID(0), 1)
	o.Seed, o.H, o.Batch = t.Seed, t.InnerSteps, t.BatchSize
	o.Context, o.Embed, o.Hidden = t.Context, t.Embed, t.Hidden
	in := t.Inner
	o.InnerLR, o.MinLR, o.Clip, o.WeightDecay, o.Warmup, o.TotalSteps = in.LR, in.MinLR, in.Clip, in.WeightDecay, in.Warmup, in.TotalSteps
	o.CompressOuterLR, o.CompressMomentum = rc.OuterLR, rc.Momentum
	o.DelayStart, o.DelayMix, o.StartResidual = rc.StartPoint, rc.StartMix, rc.StartResidual
	if rc.Merge {
		// When a round's contributions are in depends on the network; the bench takes a
		// tenth of the local work (at least one step; --merge-step sets it).
		o.MergeStep = max(1, (o.H+9)/10)
		if o.MergeStep >= o.H {
			o.MergeStep = 0 // H 1: no step to merge before
		}
	}
	o.Compress, o.Aggregate = rc.Compress, rc.Aggregate
	o.TargetRatio, o.FirstBudget = t.Compression.TargetRatio, t.Compression.FirstBudget
	o.Spec = p
	return o
}

// specModel returns the model factory of a spec-driven run: the network's θ_0 recipe with
// the run's seed in place of the spec's.
func specModel(p *node.Params) func(seed uint64) (training.Model, error) {
	return func(seed uint64) (training.Model, error) {
		q := *p
		q.Training.Seed = seed
		return q.NewModel()
	}
}

// shardCheck is how a simulated worker checks a shard's bytes before it decodes them: with
// a spec, the network's content check (compress.CheckShard with the model's shapes, the
// norm bound and the shard limits), then decoding under the spec's limits; without one,
// decoding under the default limits.
func (o *TrainOptions) shardCheck() func([]byte) (*compress.Message, error) {
	if o.Spec == nil {
		return func(b []byte) (*compress.Message, error) { return compress.DecodeShard(b, compress.DefaultLimits) }
	}
	p := o.Spec
	return func(b []byte) (*compress.Message, error) {
		if err := p.CheckContent(b); err != nil {
			return nil, err
		}
		return compress.DecodeShard(b, p.Limits)
	}
}

// maxNorm is the contribution norm bound of the compressed modes: the spec's, or none.
func (o *TrainOptions) maxNorm() float64 {
	if o.Spec == nil {
		return 0
	}
	return o.Spec.MaxNorm
}
