package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/lowband/lowband/bench"
	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/node"
)

// specFlag makes `bench train` run a network's recipe.
var specFlag = &cli.StringFlag{Name: "spec", Usage: "network spec file whose training recipe to run (model, data, inner and outer steps, codec, shard checks), or \"default\" for the default recipe of --task; recipe flags set on the command line override it"}

// benchSpecOptions returns the options of a --spec run: the spec's recipe with the recipe
// flags the user set written over it, validated again, then derived the way a node derives
// it (node.NewParams).
func benchSpecOptions(c *cli.Context) (bench.TrainOptions, error) {
	s, err := benchSpec(c)
	if err != nil {
		return bench.TrainOptions{}, err
	}
	overrideRecipe(c, &s.Training)
	if err := s.Validate(); err != nil {
		return bench.TrainOptions{}, fmt.Errorf("--spec with flags: %w", err)
	}
	p, err := node.NewParams(s)
	if err != nil {
		return bench.TrainOptions{}, fmt.Errorf("--spec: %w", err)
	}
	return bench.FromSpec(p), nil
}

// benchSpec loads --spec: a file, or "default", a spec with the default recipe of --task.
func benchSpec(c *cli.Context) (*configs.Spec, error) {
	if c.String("spec") != "default" {
		s, err := configs.LoadSpec(c.String("spec"))
		if err != nil {
			return nil, err
		}
		if c.IsSet("task") && c.String("task") != s.Training.Task {
			return nil, fmt.Errorf("--task %s: the spec's task is %s", c.String("task"), s.Training.Task)
		}
		return s, nil
	}
	s := &configs.Spec{Version: configs.SpecVersion, Name: "bench", Run: "bench", Training: configs.DefaultTrainingSpecFor(c.String("task"))}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("--spec default: %w", err)
	}
	return s, nil
}

// overrideRecipe writes the recipe flags set on the command line over t.
func overrideRecipe(c *cli.Context, t *configs.TrainingSpec) {
	ints := map[string]*int{"batch": &t.BatchSize, "inner-steps": &t.InnerSteps,
		"rank-min": &t.Compression.RankMin, "rank-max": &t.Compression.RankMax, "min-low-rank": &t.Compression.MinLowRank,
		"factor-bits": &t.Compression.FactorBits, "power-iters": &t.Compression.PowerIters,
		"dense-every": &t.Compression.DenseEvery, "block-size": &t.Compression.BlockSize}
	floats := map[string]*float64{"inner-lr": &t.Inner.LR, "compress-outer-lr": &t.Outer.LR,
		"compress-momentum": &t.Outer.Momentum, "feedback-decay": &t.Compression.FeedbackDecay,
		"target-ratio": &t.Compression.TargetRatio, "first-budget": &t.Compression.FirstBudget,
		"delay-mix": &t.Outer.StartMix}
	for name, v := range ints {
		if c.IsSet(name) {
			*v = c.Int(name)
		}
	}
	for name, v := range floats {
		if c.IsSet(name) {
			*v = c.Float64(name)
		}
	}
	if c.IsSet("hidden") {
		t.Hidden = c.IntSlice("hidden")
	}
	if c.IsSet("delay-start") {
		t.Outer.Start = c.String("delay-start")
	}
}
