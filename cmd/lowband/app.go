package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/lowband/lowband/version"
)

// exitCode lets a command choose its exit status without printing an error.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

func newApp(stdout, stderr io.Writer) *cli.App {
	return &cli.App{
		Name:                 "lowband",
		Usage:                "train models over ordinary internet links, with no coordinator",
		Version:              version.String(),
		Writer:               stdout,
		ErrWriter:            stderr,
		HideVersion:          true,
		EnableBashCompletion: true,
		ExitErrHandler:       func(*cli.Context, error) {}, // runMain prints errors
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return fmt.Errorf("unknown command %q (see lowband --help)", c.Args().First())
			}
			return cli.ShowAppHelp(c)
		},
		Commands: []*cli.Command{
			initCommand(),
			runCommand(),
			idCommand(),
			peersCommand(),
			statusCommand(),
			ledgerCommand(),
			auditCommand(),
			testnetCommand(),
			bootstrapCommand(),
			attestCommand(),
			benchCommand(),
			doctorCommand(),
			versionCommand(),
		},
	}
}

// runMain runs the CLI and returns the process exit status. Errors are printed as one line.
func runMain(args []string, stdout, stderr io.Writer) int {
	err := newApp(stdout, stderr).Run(args)
	if err == nil {
		return 0
	}
	var code exitCode
	if errors.As(err, &code) {
		return int(code)
	}
	fmt.Fprintf(stderr, "lowband: %v\n", err)
	return 1
}

func benchCommand() *cli.Command {
	return &cli.Command{
		Name:  "bench",
		Usage: "measure: each benchmark prints a table, or one JSON object with --json",
		Subcommands: []*cli.Command{
			benchDiscoveryCommand(),
			benchGossipCommand(),
			benchSwarmCommand(),
			benchTrainCommand(),
			benchVerifyCommand(),
		},
	}
}

func versionCommand() *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print the version: the release tag, else the VCS revision and time of the build",
		Action: func(c *cli.Context) error {
			_, err := fmt.Fprintf(c.App.Writer, "lowband %s\n", version.String())
			return err
		},
	}
}

// writeJSON prints v as indented JSON followed by a newline.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// jsonFlag is the --json flag shared by commands that can print JSON.
var jsonFlag = &cli.BoolFlag{Name: "json", Usage: "print one JSON object"}

// notBuilt is what a command that is not built yet returns.
func notBuilt(what string) error { return fmt.Errorf("%s is not built yet", what) }
