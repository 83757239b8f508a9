package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/node"
	"github.com/lowband/lowband/node/store"
)

func auditCommand() *cli.Command {
	return &cli.Command{
		Name:  "audit",
		Usage: "re-verify a run offline: signatures, the chain of roots, each round closed again where its shards are kept, checkpoints; exit 1 at the first round that does not check out",
		Description: "With --home (of a stopped node) it audits the home's store with the home's network spec.\n" +
			"With --records DIR [--checkpoints DIR] it audits an exported run (see --export) with --spec\n" +
			"(or the home's spec).",
		ArgsUsage: " ",
		Flags: []cli.Flag{
			homeFlag, jsonFlag,
			&cli.StringFlag{Name: "records", Usage: "directory of exported records (instead of the home's store)"},
			&cli.StringFlag{Name: "checkpoints", Usage: "directory of exported checkpoints (with --records)"},
			&cli.StringFlag{Name: "spec", Usage: "network spec file (TOML), with --records (default: the home's)"},
			&cli.StringFlag{Name: "export", Usage: "write the home's records and checkpoints to DIR/records and DIR/checkpoints, then audit"},
		},
		Action: audit,
	}
}

// audit runs the audit and prints the lineage; a run that does not check out is exit 1.
func audit(c *cli.Context) error {
	rep, err := runAudit(c)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		err = writeJSON(c.App.Writer, rep)
	} else {
		err = writeLineage(c.App.Writer, rep)
	}
	if err == nil && !rep.OK {
		return exitCode(1)
	}
	return err
}

func runAudit(c *cli.Context) (*node.AuditReport, error) {
	spec, err := auditSpec(c)
	if err != nil {
		return nil, err
	}
	if dir := c.String("records"); dir != "" {
		return node.AuditDir(dir, c.String("checkpoints"), spec)
	}
	h, err := home(c)
	if err != nil {
		return nil, err
	}
	if out := c.String("export"); out != "" {
		if err := exportRun(h, out); err != nil {
			return nil, err
		}
	}
	return node.AuditHome(h, spec)
}

// auditSpec is the network spec of --spec, else the home's.
func auditSpec(c *cli.Context) (*configs.Spec, error) {
	if path := c.String("spec"); path != "" {
		return configs.LoadSpec(path)
	}
	_, _, spec, err := loadHome(c)
	return spec, err
}

// exportRun writes a home's records and checkpoints under out.
func exportRun(h configs.Home, out string) error {
	s, err := store.Open(h.StorePath(), time.Second)
	if err != nil {
		return err
	}
	defer s.Close()
	if _, err := s.ExportRecords(filepath.Join(out, "records")); err != nil {
		return fmt.Errorf("exporting records: %w", err)
	}
	if _, err := s.ExportCheckpoints(filepath.Join(out, "checkpoints")); err != nil {
		return fmt.Errorf("exporting checkpoints: %w", err)
	}
	return nil
}

// writeLineage prints one line per round, then the verdict.
func writeLineage(w io.Writer, rep *node.AuditReport) error {
	fmt.Fprintf(w, "audit of %s/%s from %s (root %.16s)\n", rep.Network, rep.Run, rep.Start, rep.StartRoot)
	fmt.Fprintf(w, "%-6s %-16s %-12s %-8s %-8s %-8s %s\n", "round", "root", "contributors", "filtered", "evidence", "slashed", "checked")
	full := 0
	for _, l := range rep.Rounds {
		how := l.Checked
		if l.Note != "" {
			how += " (" + l.Note + ")"
		}
		how += ", signature " + l.Signature
		if l.Checkpoint {
			how += ", checkpoint " + fmt.Sprint(l.Round+1)
		}
		if l.Checked == node.CheckedFull {
			full++
		}
		slashed := "-"
		if len(l.Slashed) > 0 {
			slashed = strings.Join(l.Slashed, ",")
		}
		fmt.Fprintf(w, "%-6d %.16s %-12d %-8d %-8d %-8s %s\n", l.Round, l.Root, len(l.Contributors), len(l.Filtered), l.Evidence, slashed, how)
	}
	if rep.Failed != nil {
		_, err := fmt.Fprintf(w, "FAILED: round %d does not check out: %s\n", rep.Failed.Round, rep.Failed.Reason)
		return err
	}
	_, err := fmt.Fprintf(w, "ok: %d rounds check out (%d closed again from their shards, %d by ledger and chain only)\n", len(rep.Rounds), full, len(rep.Rounds)-full)
	return err
}
