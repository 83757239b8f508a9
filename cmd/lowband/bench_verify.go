package main

import "github.com/urfave/cli/v2"

func benchVerifyCommand() *cli.Command {
	return &cli.Command{
		Name:   "verify",
		Usage:  "attestation and signature verification rates",
		Action: func(*cli.Context) error { return notBuilt("verify") },
	}
}
