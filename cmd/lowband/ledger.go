package main

import "github.com/urfave/cli/v2"

func ledgerCommand() *cli.Command {
	return &cli.Command{
		Name:   "ledger",
		Usage:  "show the stake ledger",
		Action: func(*cli.Context) error { return notBuilt("ledger") },
	}
}
