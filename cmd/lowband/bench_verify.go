package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/lowband/lowband/bench"
)

func benchVerifyCommand() *cli.Command {
	d := bench.DefaultVerifyOptions()
	return &cli.Command{
		Name:  "verify",
		Usage: "attestation and signature verification rates, one core",
		Description: "Times, on one goroutine locked to one thread: uncached verification of a sim\n" +
			"bundle and of the go-sev-guest and go-tdx-guest sample evidence (chain to the pinned\n" +
			"root, signature, policy), cached bundle look-ups, shard header signature checks one at\n" +
			"a time and in batches of 64 (counted per signature), full shard checks that also hash\n" +
			"the payload, and bare crypto/ed25519.Verify for comparison (shard checks use\n" +
			"curve25519-voi with ZIP-215 rules). Each rate is given per second of wall time and\n" +
			"per second of the thread's CPU time; on a busy machine the second is the one-core\n" +
			"figure.",
		Flags: []cli.Flag{
			jsonFlag,
			&cli.DurationFlag{Name: "duration", Value: d.Duration, Usage: "how long each rate is measured"},
			&cli.IntFlag{Name: "payload", Value: d.PayloadBytes, Usage: "shard payload bytes for the full shard check"},
		},
		Action: func(c *cli.Context) error {
			res, err := bench.RunVerify(bench.VerifyOptions{Duration: c.Duration("duration"), PayloadBytes: c.Int("payload")})
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return writeJSON(c.App.Writer, res)
			}
			w := tabwriter.NewWriter(c.App.Writer, 0, 0, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintf(w, "measure\tper s\tper CPU s\t\n")
			for _, r := range []struct {
				name string
				rate bench.Rate
			}{
				{"sim bundle (uncached Verify)", res.SimBundles},
				{"sev-snp evidence (uncached)", res.SNPBundles},
				{"tdx evidence (uncached)", res.TDXBundles},
				{"cached bundle look-up", res.CachedLookups},
				{"shard signature check", res.ShardSigChecks},
				{fmt.Sprintf("shard signature, batches of %d", res.ShardSigBatchSize), res.ShardSigBatch},
				{fmt.Sprintf("full shard check (%d KiB payload)", res.PayloadBytes>>10), res.ShardFullChecks},
				{"bare crypto/ed25519.Verify", res.Ed25519Verifies},
			} {
				fmt.Fprintf(w, "%s\t%.0f\t%.0f\t\n", r.name, r.rate.PerS, r.rate.PerCPUS)
			}
			return w.Flush()
		},
	}
}
