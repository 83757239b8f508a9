package main

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/lowband/lowband/bench"
)

// transportFlag picks the loopback transport of the in-process hosts. TCP is the
// default: all hosts share this process's CPU, and QUIC's userspace packet
// handling makes a large in-process swarm CPU-bound.
var transportFlag = &cli.StringFlag{Name: "transport", Value: "tcp", Usage: "tcp, quic or both"}

func benchDiscoveryCommand() *cli.Command {
	return &cli.Command{
		Name:  "discovery",
		Usage: "time until every in-process host finds every other through the DHT",
		Description: "Starts one bootstrap host and nodes-1 hosts in this process on loopback; each knows only\n" +
			"the bootstrap's address. Reports the seconds from the first start until every DHT routing\n" +
			"table holds a peer, and until every host has found every other (connected to it or holding\n" +
			"it in its routing table).",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "nodes", Value: 50, Usage: "hosts, the bootstrap included"},
			transportFlag,
			&cli.DurationFlag{Name: "timeout", Value: 3 * time.Minute, Usage: "give up after this long"},
			jsonFlag,
		},
		Action: func(c *cli.Context) error {
			res, err := bench.RunDiscovery(c.Context, c.Int("nodes"), c.String("transport"), c.Duration("timeout"))
			if err != nil {
				return fmt.Errorf("bench discovery: %w", err)
			}
			if c.Bool("json") {
				return writeJSON(c.App.Writer, res)
			}
			w := c.App.Writer
			fmt.Fprintf(w, "%-28s %d\n", "nodes", res.Nodes)
			fmt.Fprintf(w, "%-28s %.3f s\n", "all routing tables non-empty", res.AllTablesNonemptyS)
			_, err = fmt.Fprintf(w, "%-28s %.3f s\n", "all peers found", res.AllPeersFoundS)
			return err
		},
	}
}

func benchGossipCommand() *cli.Command {
	return &cli.Command{
		Name:  "gossip",
		Usage: "gossip delivery latency across in-process hosts",
		Description: "Forms a swarm of in-process hosts on loopback (one bootstrap), subscribes all to one topic,\n" +
			"then publishes --messages messages of --size random bytes one after another, each from a\n" +
			"different host spread over the swarm, waiting for each to reach every host (or --wait) before\n" +
			"the next. Latency is the time from the start of Publish until a receiving host's subscription\n" +
			"delivers the message; the quantiles pool every (message, receiver) pair. delivered_fraction is\n" +
			"deliveries over messages x (nodes-1). Sizes take units: 512KiB, 1MiB, 1000 (bytes); the\n" +
			"gossip cap is just under 1 MiB.",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "nodes", Value: 32, Usage: "hosts, the bootstrap included"},
			transportFlag,
			&cli.StringFlag{Name: "size", Value: "512KiB", Usage: "payload per message"},
			&cli.IntFlag{Name: "messages", Value: 5, Usage: "messages published, each from a different host"},
			&cli.DurationFlag{Name: "wait", Value: 30 * time.Second, Usage: "how long one message may take to reach everyone"},
			&cli.DurationFlag{Name: "timeout", Value: 3 * time.Minute, Usage: "bound on forming the swarm"},
			jsonFlag,
		},
		Action: func(c *cli.Context) error {
			size, err := bench.ParseSize(c.String("size"))
			if err != nil {
				return err
			}
			res, err := bench.RunGossip(c.Context, bench.GossipOptions{
				Nodes: c.Int("nodes"), Size: size, Messages: c.Int("messages"),
				Wait: c.Duration("wait"), Timeout: c.Duration("timeout"), Transport: c.String("transport"),
			})
			if err != nil {
				return fmt.Errorf("bench gossip: %w", err)
			}
			if c.Bool("json") {
				return writeJSON(c.App.Writer, res)
			}
			w := c.App.Writer
			fmt.Fprintf(w, "%-20s %d\n%-20s %d\n%-20s %d\n", "nodes", res.Nodes, "size bytes", res.SizeBytes, "messages", res.Messages)
			fmt.Fprintf(w, "%-20s %.4f\n", "delivered fraction", res.DeliveredFraction)
			_, err = fmt.Fprintf(w, "%-20s %.4f s\n%-20s %.4f s\n%-20s %.4f s\n", "p50", res.P50S, "p99", res.P99S, "max", res.MaxS)
			return err
		},
	}
}
