package main

import "github.com/urfave/cli/v2"

func benchTrainCommand() *cli.Command {
	return &cli.Command{
		Name:   "train",
		Usage:  "DiLoCo training modes compared",
		Action: func(*cli.Context) error { return notBuilt("train") },
	}
}
