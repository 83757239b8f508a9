package main

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/lowband/lowband/bench"
)

// transportFlag picks the network of the in-process hosts. TCP on loopback is the
// default: all hosts share this process's CPU, and QUIC's userspace packet
// handling makes a large in-process swarm CPU-bound. mem is go-libp2p's in-memory
// mocknet, for swarms larger than one machine's sockets and file descriptors allow.
var transportFlag = &cli.StringFlag{Name: "transport", Value: "tcp", Usage: "tcp, quic, both (loopback) or mem (in-memory)"}

// cpuProfileFlag writes a CPU profile of the whole benchmark (go tool pprof reads it).
var cpuProfileFlag = &cli.StringFlag{Name: "cpuprofile", Usage: "write a CPU profile of the run to this file"}

// startCPUProfile starts a CPU profile into path and returns the function that stops
// it; an empty path profiles nothing.
func startCPUProfile(path string) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); _ = f.Close() }, nil
}

// formedHelp says what a formed swarm is, for the commands that report one.
const formedHelp = "The swarm is formed when every host (the bootstrap included) is in the gossipsub mesh of\n" +
	"each of the run's four topics with at least D_lo (5) peers (gossipsub grafts up to D = 6 only\n" +
	"below D_lo), every DHT routing table holds at least min(20, nodes-1) peers, and on each topic\n" +
	"every host reaches every other along mesh links (a message from any host reaches all). Every\n" +
	"host but the bootstrap subscribes to every topic, as a training node does. formed_s is the\n" +
	"time from the first start until then, formed_cpu_s the CPU time this process spent,\n" +
	"mem_per_host_bytes the Go heap and stacks in use then over the hosts; peers_mean and peers_max\n" +
	"the connections a host holds then, dht_requests_per_host the DHT requests a host answered,\n" +
	"hosts_below_d the hosts with a mesh of D_lo..D-1 on some topic."

// printFormation prints the figures of a formed swarm as a table.
func printFormation(w io.Writer, f bench.Formation) {
	fmt.Fprintf(w, "%-28s %d (%s)\n", "nodes", f.Nodes, f.Transport)
	fmt.Fprintf(w, "%-28s %.3f s\n", "every host subscribed", f.SubscribedS)
	fmt.Fprintf(w, "%-28s %.3f s\n", "all routing tables non-empty", f.AllTablesNonemptyS)
	fmt.Fprintf(w, "%-28s %.3f s (%.1f s CPU)\n", "formed", f.FormedS, f.FormedCPUS)
	fmt.Fprintf(w, "%-28s %.1f MiB\n", "memory per host", float64(f.MemPerHostBytes)/(1<<20))
	fmt.Fprintf(w, "%-28s %.1f mean, %d max\n", "connected peers per host", f.PeersMean, f.PeersMax)
	fmt.Fprintf(w, "%-28s %.0f\n", "DHT requests per host", f.DHTRequestsPerHost)
	fmt.Fprintf(w, "%-28s %d\n", "hosts with a mesh below D", f.HostsBelowD)
}

func benchDiscoveryCommand() *cli.Command {
	return &cli.Command{
		Name:  "discovery",
		Usage: "time until a swarm of in-process hosts has formed through the DHT and gossipsub",
		Description: "Starts one bootstrap host and nodes-1 hosts in this process; each knows only the bootstrap's\n" +
			"address. Reports the seconds from the first start until every host has subscribed, until\n" +
			"every DHT routing table holds a peer, until the swarm is formed, and then the longest a\n" +
			"message took to reach every subscribed host (reach_all_s), of 4 published one at a time\n" +
			"from hosts spread over the swarm.\n" + formedHelp,
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "nodes", Value: 50, Usage: "hosts, the bootstrap included"},
			transportFlag,
			&cli.DurationFlag{Name: "timeout", Value: 3 * time.Minute, Usage: "give up after this long"},
			cpuProfileFlag,
			jsonFlag,
		},
		Action: func(c *cli.Context) error {
			stop, err := startCPUProfile(c.String("cpuprofile"))
			if err != nil {
				return err
			}
			defer stop()
			res, err := bench.RunDiscovery(c.Context, c.Int("nodes"), c.String("transport"), c.Duration("timeout"))
			if err != nil {
				return fmt.Errorf("bench discovery: %w", err)
			}
			if c.Bool("json") {
				return writeJSON(c.App.Writer, res)
			}
			printFormation(c.App.Writer, res.Formation)
			_, err = fmt.Fprintf(c.App.Writer, "%-28s %.3f s (slowest of %d)\n", "a message reaches all", res.ReachAllS, res.Messages)
			return err
		},
	}
}

func benchGossipCommand() *cli.Command {
	return &cli.Command{
		Name:  "gossip",
		Usage: "gossip delivery latency across in-process hosts",
		Description: "Forms a swarm of in-process hosts (one bootstrap; see below), then publishes --messages messages of --size random bytes one after another, each from a\n" +
			"different host spread over the swarm, waiting for each to reach every host (or --wait) before\n" +
			"the next. Latency is the time from the start of Publish until a receiving host's subscription\n" +
			"delivers the message; the quantiles pool every (message, receiver) pair. delivered_fraction is\n" +
			"deliveries over messages x (nodes-1). Sizes take units: 512KiB, 1MiB, 1000 (bytes); the\n" +
			"gossip cap is just under 1 MiB.\n" + formedHelp,
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "nodes", Value: 32, Usage: "hosts, the bootstrap included"},
			transportFlag,
			&cli.StringFlag{Name: "size", Value: "512KiB", Usage: "payload per message"},
			&cli.IntFlag{Name: "messages", Value: 5, Usage: "messages published, each from a different host"},
			&cli.DurationFlag{Name: "wait", Value: 30 * time.Second, Usage: "how long one message may take to reach everyone"},
			&cli.DurationFlag{Name: "timeout", Value: 3 * time.Minute, Usage: "bound on forming the swarm"},
			cpuProfileFlag,
			jsonFlag,
		},
		Action: func(c *cli.Context) error {
			size, err := bench.ParseSize(c.String("size"))
			if err != nil {
				return err
			}
			stop, err := startCPUProfile(c.String("cpuprofile"))
			if err != nil {
				return err
			}
			defer stop()
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
			printFormation(w, res.Formation)
			fmt.Fprintf(w, "%-20s %d\n%-20s %d\n", "size bytes", res.SizeBytes, "messages", res.Messages)
			fmt.Fprintf(w, "%-20s %.4f\n", "delivered fraction", res.DeliveredFraction)
			_, err = fmt.Fprintf(w, "%-20s %.4f s\n%-20s %.4f s\n%-20s %.4f s\n", "p50", res.P50S, "p99", res.P99S, "max", res.MaxS)
			return err
		},
	}
}
