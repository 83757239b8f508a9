package main

import "github.com/urfave/cli/v2"

func benchDiscoveryCommand() *cli.Command {
	return &cli.Command{
		Name:   "discovery",
		Usage:  "time until every in-process host finds every other through the DHT",
		Action: func(*cli.Context) error { return notBuilt("bench discovery") },
	}
}

func benchGossipCommand() *cli.Command {
	return &cli.Command{
		Name:   "gossip",
		Usage:  "gossip delivery latency across in-process hosts",
		Action: func(*cli.Context) error { return notBuilt("bench gossip") },
	}
}
