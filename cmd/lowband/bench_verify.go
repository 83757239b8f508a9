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
		Description: "Times, on one goroutine: uncached verification of a sim bundle and of the\n" +
			"go-sev-guest and go-tdx-guest sample evidence (chain to the pinned root, signature,\n" +
			"policy), cached bundle look-ups, shard header signature checks, and full shard checks\n" +
			"that also hash the payload; and bare ed25519.Verify, the ceiling of the signature check.",
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
			fmt.Fprintf(w, "measure\tper second\t\n")
			fmt.Fprintf(w, "sim bundle (uncached Verify)\t%.0f\t\n", res.SimBundlesPerS)
			fmt.Fprintf(w, "sev-snp evidence (uncached)\t%.0f\t\n", res.SNPBundlesPerS)
			fmt.Fprintf(w, "tdx evidence (uncached)\t%.0f\t\n", res.TDXBundlesPerS)
			fmt.Fprintf(w, "cached bundle look-up\t%.0f\t\n", res.CachedLookupsPerS)
			fmt.Fprintf(w, "shard signature check\t%.0f\t\n", res.ShardSigChecksPerS)
			fmt.Fprintf(w, "full shard check (%d KiB payload)\t%.0f\t\n", res.PayloadBytes>>10, res.ShardFullChecksPerS)
			fmt.Fprintf(w, "bare ed25519.Verify (ceiling)\t%.0f\t\n", res.Ed25519VerifiesPerS)
			return w.Flush()
		},
	}
}
