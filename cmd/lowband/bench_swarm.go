package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/lowband/lowband/bench"
	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/p2p/p2ptest"
)

func benchSwarmCommand() *cli.Command {
	return &cli.Command{
		Name:  "swarm",
		Usage: "an in-process swarm of real nodes training over libp2p, measured from their statuses",
		Description: "Starts a bootstrap node and --nodes training nodes in this process, each with\n" +
			"its own home in a temporary directory, on one generated local network spec (the devnet's\n" +
			"simulated attestation, the task's default recipe with --inner-steps and --batch, equal\n" +
			"stakes, genesis now). The first nodes run the --adversaries modes, one each. Runs until\n" +
			"every honest node has closed and scored --rounds rounds, printing a line per round on\n" +
			"stderr, and reports from the honest nodes' statuses; then trains the same run's dense\n" +
			"AllReduce baseline at equal tokens in this process (allreduce_eval_loss). peak_rss_bytes is the whole\n" +
			"process's, every node together; verify_share is the nodes' verification CPU over the\n" +
			"process's CPU. On loopback sockets, or with --link-mbps or --latency-ms on an in-memory\n" +
			"network (go-libp2p's mocknet) where each node has an emulated home link: an uplink of\n" +
			"--link-mbps shared by all its streams and --latency-ms one way; link_check then times a\n" +
			"1 MiB transfer across one such link against its bytes over the uplink plus the latency.",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "nodes", Value: 4, Usage: "training nodes (a bootstrap node is added)"},
			&cli.IntFlag{Name: "rounds", Value: 5, Usage: "rounds every honest node must close and score"},
			&cli.StringFlag{Name: "task", Value: "charlm", Usage: "charlm, fmnist or synthetic"},
			&cli.IntFlag{Name: "inner-steps", Usage: "inner steps per round (H); 0: the task's default"},
			&cli.IntFlag{Name: "batch", Usage: "samples per inner step; 0: the task's default"},
			&cli.StringFlag{Name: "adversaries", Usage: "adversary modes of the first nodes, comma-separated (KIND,KIND)"},
			&cli.StringFlag{Name: "aggregation", Usage: "aggregation rule: " + strings.Join(configs.AggregationMethods, ", ") + " (default: the task's)"},
			&cli.Float64Flag{Name: "trim", Value: 0.25, Usage: "with --aggregation trimmed_mean: the fraction trimmed from each side"},
			&cli.BoolFlag{Name: "merge", Usage: "the recipe's outer.merge, on (--merge) or off (--merge=false): a node closes a round during the next round's local work and moves that work to θ after it (default: the task's recipe)"},
			&cli.Float64Flag{Name: "link-mbps", Usage: "emulated uplink per node, Mbit/s (0: unlimited)"},
			&cli.Float64Flag{Name: "latency-ms", Usage: "emulated latency, ms one way"},
			&cli.Float64Flag{Name: "deadline-min", Value: 10, Usage: "seconds a round waits at least for a missing peer (the spec's deadline_min)"},
			&cli.Float64Flag{Name: "deadline-max", Value: 30, Usage: "seconds a round waits at most for a silent peer, and round 0 for the genesis peers (deadline_max)"},
			&cli.IntFlag{Name: "compute-slots", Value: -1, Usage: "nodes that may run an inner step or an evaluation at once (-1: as many as the process has cores; 0: no limit)"},
			&cli.DurationFlag{Name: "timeout", Value: 30 * time.Minute, Usage: "give up after this long"},
			cpuProfileFlag,
			jsonFlag,
		},
		Action: benchSwarm,
	}
}

func benchSwarm(c *cli.Context) error {
	dir, err := os.MkdirTemp("", "lowband-bench-swarm-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	opt := bench.SwarmOptions{
		Nodes: c.Int("nodes"), Rounds: c.Int("rounds"), Task: c.String("task"),
		InnerSteps: c.Int("inner-steps"), Batch: c.Int("batch"),
		LinkMbps: c.Float64("link-mbps"), LatencyMS: c.Float64("latency-ms"), Dir: dir,
		DeadlineMin: c.Float64("deadline-min"), DeadlineMax: c.Float64("deadline-max"),
		ComputeSlots: c.Int("compute-slots"),
	}
	if c.IsSet("merge") {
		merge := c.Bool("merge")
		opt.Merge = &merge
	}
	if opt.ComputeSlots == -1 {
		opt.ComputeSlots = runtime.GOMAXPROCS(0)
	}
	if a := c.String("adversaries"); a != "" {
		opt.Adversaries = strings.Split(a, ",")
	}
	if m := c.String("aggregation"); m != "" {
		opt.Aggregation = configs.AggregationSpec{Method: m}
		if m == "trimmed_mean" {
			opt.Aggregation.Trim = c.Float64("trim")
		}
	}
	stop, err := startCPUProfile(c.String("cpuprofile"))
	if err != nil {
		return err
	}
	defer stop()
	sctx, unsignal := signalContext(c.Context) // Ctrl-C stops the nodes, and the profile is written
	defer unsignal()
	ctx, cancel := context.WithTimeout(sctx, c.Duration("timeout"))
	defer cancel()
	res, err := bench.RunSwarm(ctx, opt, c.App.ErrWriter)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return writeJSON(c.App.Writer, res)
	}
	return writeSwarmTable(c.App.Writer, res)
}

// writeSwarmTable prints a swarm result as name-value lines.
func writeSwarmTable(w io.Writer, r *bench.SwarmResult) error {
	rows := []struct {
		name string
		v    any
	}{
		{"task, nodes, rounds", fmt.Sprintf("%s, %d, %d (H %d, batch %d)", r.Task, r.Nodes, r.Rounds, r.H, r.Batch)},
		{"transport", r.Transport},
		{"compute slots (0: no limit)", r.ComputeSlots},
		{"link check (measured / expected)", linkCheckLine(r.LinkCheck)},
		{"held-out loss", fmt.Sprintf("%.4f -> %.4f", r.EvalLoss.Initial, r.EvalLoss.Final)},
		{"dense AllReduce baseline loss", fmt.Sprintf("%.4f", r.AllReduceEvalLoss)},
		{"roots agree", r.RootsAgree},
		{"stall share (worst)", fmt.Sprintf("%.4f", r.StallShare)},
		{"of it after the last contribution was sent (worst)", fmt.Sprintf("%.4f", r.ExchangeStallShare)},
		{"contribution B/node-round", fmt.Sprintf("%.0f", r.ContributionBytesPerNodeRound)},
		{"wire sent B/node-round", fmt.Sprintf("%.0f", r.WireBytesPerNodeRound)},
		{"wire sent B/node-round after round 0", fmt.Sprintf("%.0f", r.WireBytesPerNodeRoundFormed)},
		{"ring all-reduce B/node-round", fmt.Sprintf("%.0f", r.RingAllReduceBytesPerNodeRound)},
		{"verify share of CPU", fmt.Sprintf("%.4f", r.VerifyShare)},
		{"peak RSS (process, per node)", fmt.Sprintf("%.1f MiB, %.1f MiB", float64(r.PeakRSSBytes)/(1<<20), float64(r.PeakRSSPerNodeBytes)/(1<<20))},
		{"wall, CPU", fmt.Sprintf("%.1f s, %.1f s", r.WallSeconds, r.CPUSeconds)},
	}
	if r.BadAggregated != nil {
		rows = append(rows, struct {
			name string
			v    any
		}{"slashed correctly, honest slashed, bad aggregated", fmt.Sprintf("%d, %d, %d", *r.SlashedCorrectly, *r.HonestSlashed, *r.BadAggregated)})
	}
	for _, row := range rows {
		if _, err := fmt.Fprintf(w, "%-50s %v\n", row.name, row.v); err != nil {
			return err
		}
	}
	return nil
}

// linkCheckLine is a link check as one line; "-" on loopback.
func linkCheckLine(c *p2ptest.LinkCheck) string {
	if c == nil {
		return "-"
	}
	return fmt.Sprintf("%d B in %.3f s, expected %.3f s (ratio %.2f)", c.Bytes, c.MeasuredS, c.ExpectedS, c.Ratio)
}
