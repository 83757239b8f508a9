package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/node"
	"github.com/lowband/lowband/node/store"
)

func ledgerCommand() *cli.Command {
	return &cli.Command{
		Name:   "ledger",
		Usage:  "show the stake ledger of the running node",
		Flags:  []cli.Flag{homeFlag, jsonFlag},
		Action: ledgerShow,
		Subcommands: []*cli.Command{{
			Name:      "replay",
			Usage:     "replay commit records offline from a network spec's genesis, re-checking their evidence, and print the ledger",
			ArgsUsage: " ",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "spec", Usage: "network spec file (TOML)", Required: true},
				&cli.StringFlag{Name: "records", Usage: "directory of encoded commit records, one per file", Required: true},
				jsonFlag,
			},
			Action: ledgerReplay,
		}},
	}
}

// ledgerShow asks the running node for its ledger (GET /ledger).
func ledgerShow(c *cli.Context) error {
	h, err := home(c)
	if err != nil {
		return err
	}
	var t incentives.Table
	if err := apiGet(c.Context, h, "/ledger", &t); err != nil {
		return err
	}
	if c.Bool("json") {
		return writeJSON(c.App.Writer, t)
	}
	return t.WriteText(c.App.Writer)
}

// replayResult is what ledger replay prints with --json.
type replayResult struct {
	Records int `json:"records"`
	// ContentChecked says that invalid-content evidence was re-checked (always, since the
	// content check comes from the spec).
	ContentChecked bool `json:"content_checked"`
	incentives.Table
}

// ledgerReplay applies the records in --records to the genesis of --spec. Evidence is
// re-checked as a live node checks it, with the checker node.NewParams builds from the spec:
// its attestation policy at its time base, and shard content against the spec's model
// shapes, shard limits and norm bound.
func ledgerReplay(c *cli.Context) error {
	spec, err := configs.LoadSpec(c.String("spec"))
	if err != nil {
		return err
	}
	p, err := node.NewParams(spec)
	if err != nil {
		return fmt.Errorf("%s: %w", c.String("spec"), err)
	}
	genesis, err := p.GenesisState()
	if err != nil {
		return fmt.Errorf("%s: %w", c.String("spec"), err)
	}
	st, n, err := store.ReplayDir(c.String("records"), genesis, p.Checker)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return writeJSON(c.App.Writer, replayResult{Records: n, ContentChecked: true, Table: st.Table()})
	}
	if _, err := fmt.Fprintf(c.App.Writer, "replayed %d records\n", n); err != nil {
		return err
	}
	return st.Table().WriteText(c.App.Writer)
}
