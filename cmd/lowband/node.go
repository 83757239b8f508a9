package main

import (
	"fmt"
	"math"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/urfave/cli/v2"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/node"
	"github.com/lowband/lowband/version"
)

func initCommand() *cli.Command {
	return &cli.Command{
		Name:      "init",
		Usage:     "create a home directory: identity key, config.toml and network spec",
		UsageText: "lowband init [--home DIR] [--profile local|public|bootstrap] [--network FILE] [--force]",
		Flags: []cli.Flag{
			homeFlag,
			&cli.StringFlag{Name: "profile", Value: configs.ProfileLocal, Usage: "local, public or bootstrap"},
			&cli.StringFlag{Name: "network", Usage: "network spec file to join (default: the built-in devnet spec)"},
			&cli.BoolFlag{Name: "force", Usage: "overwrite an existing home (a new identity!)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return fmt.Errorf("init takes no arguments (got %q)", c.Args().First())
			}
			h, err := home(c)
			if err != nil {
				return err
			}
			opts := configs.InitOptions{Profile: c.String("profile"), Force: c.Bool("force")}
			if f := c.String("network"); f != "" {
				if opts.Spec, err = os.ReadFile(f); err != nil {
					return fmt.Errorf("reading network spec: %w", err)
				}
				if _, err := configs.ParseSpec(f, opts.Spec); err != nil {
					return err
				}
			}
			if err := h.Init(opts); err != nil {
				return err
			}
			key, err := h.LoadIdentity()
			if err != nil {
				return err
			}
			id, err := peer.IDFromPrivateKey(key)
			if err != nil {
				return err
			}
			fmt.Fprintf(c.App.Writer, "initialised %s (profile %s)\npeer id: %s\n", h.Dir, opts.Profile, id)
			return nil
		},
	}
}

func runCommand() *cli.Command {
	return &cli.Command{
		Name:      "run",
		Usage:     "run the node until SIGINT or SIGTERM",
		UsageText: "lowband run [--home DIR] [--role node|bootstrap] [--log-format text|json] [--log-level LEVEL] [--adversary KIND] [--pprof HOST:PORT]",
		Flags: []cli.Flag{
			homeFlag,
			&cli.StringFlag{Name: "role", Usage: "node (trains) or bootstrap (DHT and gossip only); default from config.toml"},
			&cli.StringFlag{Name: "adversary", Usage: "misbehave on purpose, to test a network whose spec allows it: " + strings.Join(node.AdversaryKinds, ", ")},
			&cli.StringFlag{Name: "log-format", Usage: "text or json (default from config.toml)"},
			&cli.StringFlag{Name: "log-level", Usage: "debug, info, warn or error (default from config.toml)"},
			&cli.StringFlag{Name: "pprof", Usage: "serve Go's runtime profiles (/debug/pprof/) on this loopback host:port"},
		},
		Action: func(c *cli.Context) error {
			h, cfg, spec, err := loadHome(c)
			if err != nil {
				return err
			}
			if f := c.String("log-format"); f != "" {
				cfg.Log.Format = f
			}
			if l := c.String("log-level"); l != "" {
				cfg.Log.Level = l
			}
			if err := cfg.Validate(); err != nil {
				return err
			}
			role := c.String("role")
			if role == "" {
				role = cfg.Role
			}
			if c.String("adversary") != "" && role != configs.RoleNode {
				return fmt.Errorf("--adversary is for a training node, not a %s node", role)
			}
			log := node.NewLogger(c.App.ErrWriter, cfg.Log)
			if lim := memoryLimit(cfg.MemoryLimitMiB, os.Getenv("GOMEMLIMIT")); lim != math.MaxInt64 {
				log.Info("memory limit", "mib", lim>>20)
			}
			if a := c.String("pprof"); a != "" {
				addr, stop, err := startPprof(a)
				if err != nil {
					return err
				}
				defer stop()
				log.Info("serving profiles", "addr", "http://"+addr+"/debug/pprof/")
			}
			ctx, stop := signalContext(c.Context)
			defer stop()
			n, err := node.New(ctx, node.Options{
				Home: h, Config: cfg, Spec: spec, Role: role, Logger: log, Version: version.String(),
				Adversary: c.String("adversary"),
			})
			if err != nil {
				return err
			}
			err = n.Run(ctx)
			log.Info("node stopped")
			return err
		},
	}
}

func idCommand() *cli.Command {
	return &cli.Command{
		Name:  "id",
		Usage: "print the peer ID and the listen and announce addresses (works without a running node)",
		Flags: []cli.Flag{homeFlag, jsonFlag},
		Action: func(c *cli.Context) error {
			h, cfg, _, err := loadHome(c)
			if err != nil {
				return err
			}
			key, err := h.LoadIdentity()
			if err != nil {
				return err
			}
			id, err := peer.IDFromPrivateKey(key)
			if err != nil {
				return err
			}
			out := struct {
				PeerID   string   `json:"peer_id"`
				Listen   []string `json:"listen"`
				Announce []string `json:"announce"`
				Running  []string `json:"running,omitempty"`
			}{PeerID: id.String(), Listen: cfg.P2P.Listen, Announce: cfg.P2P.Announce}
			var st node.Status
			if apiGet(c.Context, h, "/status", &st) == nil {
				out.Running = st.Addresses
			}
			if c.Bool("json") {
				return writeJSON(c.App.Writer, out)
			}
			w := c.App.Writer
			fmt.Fprintf(w, "peer id:  %s\n", out.PeerID)
			fmt.Fprintf(w, "listen:   %s\n", strings.Join(out.Listen, " "))
			if len(out.Announce) > 0 {
				fmt.Fprintf(w, "announce: %s\n", strings.Join(out.Announce, " "))
			}
			for _, a := range out.Running {
				fmt.Fprintf(w, "running:  %s\n", a)
			}
			return nil
		},
	}
}

func peersCommand() *cli.Command {
	return &cli.Command{
		Name:  "peers",
		Usage: "list the running node's connected peers",
		Flags: []cli.Flag{homeFlag, jsonFlag},
		Action: func(c *cli.Context) error {
			h, err := home(c)
			if err != nil {
				return err
			}
			var ps []node.Peer
			if err := apiGet(c.Context, h, "/peers", &ps); err != nil {
				return err
			}
			if c.Bool("json") {
				return writeJSON(c.App.Writer, ps)
			}
			tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "PEER\tADDRESSES")
			for _, p := range ps {
				fmt.Fprintf(tw, "%s\t%s\n", p.ID, strings.Join(p.Addresses, " "))
			}
			return tw.Flush()
		},
	}
}
