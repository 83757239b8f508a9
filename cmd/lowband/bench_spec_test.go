package main

import (
	"os"
	"path/filepath"
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
