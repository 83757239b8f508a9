package main

import "github.com/urfave/cli/v2"

func attestCommand() *cli.Command {
	return &cli.Command{
		Name:   "attest",
		Usage:  "verify and produce TEE attestation evidence",
		Action: func(*cli.Context) error { return notBuilt("attest") },
	}
}
