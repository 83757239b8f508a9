package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/lowband/lowband/bench"
)

// trainOptionsOf parses a `bench train` command line into options without running it.
func trainOptionsOf(t *testing.T, args ...string) (bench.TrainOptions, error) {
	t.Helper()
	cmd := benchTrainCommand()
	var o bench.TrainOptions
	var err error
	cmd.Action = func(c *cli.Context) error {
		o, err = benchTrainOptions(c)
		return nil
	}
	app := &cli.App{Commands: []*cli.Command{cmd}}
	if e := app.Run(append([]string{"lowband", "train"}, args...)); e != nil {
		t.Fatal(e)
	}
	return o, err
}

// --spec takes the recipe from the spec, as node.Params derives it; recipe flags set on
// the command line override it, and the bench's own flags keep working.
func TestBenchTrainSpecFlagsOverrideTheSpec(t *testing.T) {
	o, err := trainOptionsOf(t, "--spec", "default", "--task", "fmnist", "--workers", "3")
	if err != nil {
		t.Fatal(err)
	}
	if o.Spec == nil || o.Task != "fmnist" || o.Workers != 3 || o.Compress.RankMax != o.Spec.Training.Compression.RankMax || o.TotalSteps != o.Spec.Training.Inner.TotalSteps {
		t.Fatalf("--spec default: %+v", o)
	}
	o, err = trainOptionsOf(t, "--spec", "default", "--task", "fmnist", "--rank-max", "9", "--compress-momentum", "0", "--inner-steps", "7")
	if err != nil {
		t.Fatal(err)
	}
	if o.Compress.RankMax != 9 || o.Spec.Limits.MaxRank != 9 || o.CompressMomentum != 0 || o.H != 7 {
		t.Fatalf("flags did not override the spec: rank max %d (limit %d), momentum %v, H %d", o.Compress.RankMax, o.Spec.Limits.MaxRank, o.CompressMomentum, o.H)
	}
	o, err = trainOptionsOf(t, "--spec", "default", "--task", "fmnist", "--min-low-rank", "1024", "--target-ratio", "300")
	if err != nil || o.TargetRatio != 300 || o.Compress.ByteBudget == 0 {
		t.Fatalf("--target-ratio over the spec: ratio %v, budget %d, %v", o.TargetRatio, o.Compress.ByteBudget, err)
	}
	o, err = trainOptionsOf(t, "--spec", "default", "--task", "fmnist", "--delay-mix", "0.3", "--first-budget", "2", "--power-iters", "4")
	if err != nil || o.DelayMix != 0.3 || o.FirstBudget != 2 || o.Compress.PowerIters != 4 {
		t.Fatalf("--delay-mix, --first-budget, --power-iters over the spec: %v, %v, %d, %v", o.DelayMix, o.FirstBudget, o.Compress.PowerIters, err)
	}
	o, err = trainOptionsOf(t, "--task", "fmnist", "--delay-mix", "0.3", "--first-budget", "2", "--power-iters", "4")
	if err != nil || o.DelayMix != 0.3 || o.FirstBudget != 2 || o.Compress.PowerIters != 4 {
		t.Fatalf("--delay-mix, --first-budget, --power-iters: %v, %v, %d, %v", o.DelayMix, o.FirstBudget, o.Compress.PowerIters, err)
	}
	if _, err := trainOptionsOf(t, "--spec", "default", "--feedback-decay", "2"); err == nil {
		t.Fatal("a flag that makes the spec invalid was accepted")
	}
	path := filepath.Join(t.TempDir(), "network.toml")
	if err := os.WriteFile(path, []byte("version = 1\nname = \"n\"\nrun = \"r\"\n[training]\ntask = \"fmnist\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if o, err = trainOptionsOf(t, "--spec", path); err != nil || o.Task != "fmnist" {
		t.Fatalf("--spec file: task %q, %v", o.Task, err)
	}
	if _, err := trainOptionsOf(t, "--spec", path, "--task", "charlm"); err == nil {
		t.Fatal("--task other than the spec's accepted")
	}
}

// Every recipe flag set on the command line changes a --spec run's options: none is
// silently dropped (--start-residual once was, and a screen ran the spec's value instead).
func TestBenchTrainSpecHonoursEveryRecipeFlag(t *testing.T) {
	values := map[string]string{
		"inner-steps": "7", "batch": "8", "hidden": "1024", "inner-lr": "0.001",
		"compress-outer-lr": "0.5", "compress-momentum": "0.3", "delay-outer-lr": "0.9", "delay-momentum": "0.2",
		"delay-start": "global --delay-mix 0", "delay-mix": "0.3", "start-residual": "0.4", "start-sent": "0.2", "merge-step": "2",
		"feedback-decay": "0.9", "rank-min": "2 --target-ratio 300", "rank-max": "9", "factor-bits": "4", "power-iters": "3",
		"codec": "topk", "dense-every": "4", "block-size": "128", "fragments": "2",
		"shared-rank": "8", "shared-power-iters": "-1", "min-low-rank": "2048",
		"target-ratio": "300", "first-budget": "2 --target-ratio 300",
	}
	own := map[string]bool{ // the bench's own flags, and the ones that choose the recipe
		"json": true, "spec": true, "task": true, "workers": true, "rounds": true, "seed": true, "seeds": true,
		"corpus": true, "fmnist-dir": true, "eval": true, "pareto": true, "modes": true,
		"outer-lr": true, "momentum": true, "aggregation": true, "trim": true, "adversaries": true, "help": true,
	}
	for _, f := range benchTrainCommand().Flags {
		name := f.Names()[0]
		if own[name] {
			continue
		}
		v, ok := values[name]
		if !ok {
			t.Errorf("recipe flag --%s has no value in this test", name)
			continue
		}
		// A value may bring other flags its own needs; the options are compared with a run
		// of those other flags alone.
		val, extra, _ := strings.Cut(v, " ")
		rest := append([]string{"--spec", "default", "--task", "fmnist"}, strings.Fields(extra)...)
		base, err := trainOptionsOf(t, rest...)
		if err != nil {
			t.Fatalf("%v: %v", rest, err)
		}
		o, err := trainOptionsOf(t, append(rest, "--"+name, val)...)
		if err != nil {
			t.Errorf("--%s %s: %v", name, v, err)
			continue
		}
		if again, _ := trainOptionsOf(t, rest...); !sameOptions(again, base) {
			t.Fatalf("%v parsed twice gave different options: the comparison cannot see a change", rest)
		}
		if sameOptions(o, base) {
			t.Errorf("--%s %s over --spec default changed nothing", name, v)
		}
	}
}

// sameOptions compares two runs' options: the bench's own and what the network's
// parameters derive from the spec (they hold the evidence checker, which holds functions).
func sameOptions(a, b bench.TrainOptions) bool {
	pa, pb := a.Spec, b.Spec
	a.Spec, b.Spec = nil, nil
	if !reflect.DeepEqual(a, b) || (pa == nil) != (pb == nil) {
		return false
	}
	return pa == nil || reflect.DeepEqual(pa.Training, pb.Training) && reflect.DeepEqual(pa.Limits, pb.Limits) &&
		reflect.DeepEqual(pa.Shapes, pb.Shapes) && pa.MaxNorm == pb.MaxNorm && reflect.DeepEqual(pa.Deadline, pb.Deadline)
}
