package main

import (
	"fmt"
	"slices"

	"github.com/urfave/cli/v2"

	"github.com/lowband/lowband/configs"
)

func bootstrapCommand() *cli.Command {
	return &cli.Command{
		Name:  "bootstrap",
		Usage: "list, add or remove bootstrap peers in config.toml",
		Subcommands: []*cli.Command{
			{
				Name:  "list",
				Usage: "list bootstrap peers: the network spec's and this node's own",
				Flags: []cli.Flag{homeFlag, jsonFlag},
				Action: func(c *cli.Context) error {
					_, cfg, spec, err := loadHome(c)
					if err != nil {
						return err
					}
					if c.Bool("json") {
						return writeJSON(c.App.Writer, map[string][]string{
							"spec": nonNil(spec.Bootstrap), "config": nonNil(cfg.P2P.Bootstrap),
						})
					}
					for _, a := range spec.Bootstrap {
						fmt.Fprintf(c.App.Writer, "%s\t(network spec)\n", a)
					}
					for _, a := range cfg.P2P.Bootstrap {
						fmt.Fprintf(c.App.Writer, "%s\t(config.toml)\n", a)
					}
					return nil
				},
			},
			{
				Name:      "add",
				Usage:     "add a bootstrap peer (a multiaddr ending in /p2p/<peer ID>)",
				ArgsUsage: "ADDR",
				Flags:     []cli.Flag{homeFlag},
				Action: func(c *cli.Context) error {
					return editBootstrap(c, func(list []string, addr string) ([]string, error) {
						if slices.Contains(list, addr) {
							return nil, fmt.Errorf("%s is already in the bootstrap list", addr)
						}
						return append(list, addr), nil
					})
				},
			},
			{
				Name:      "rm",
				Usage:     "remove a bootstrap peer from config.toml",
				ArgsUsage: "ADDR",
				Flags:     []cli.Flag{homeFlag},
				Action: func(c *cli.Context) error {
					return editBootstrap(c, func(list []string, addr string) ([]string, error) {
						i := slices.Index(list, addr)
						if i < 0 {
							return nil, fmt.Errorf("%s is not in config.toml's bootstrap list", addr)
						}
						return slices.Delete(list, i, i+1), nil
					})
				},
			},
		},
	}
}

// editBootstrap applies edit to config.toml's bootstrap list, validates and writes it back.
func editBootstrap(c *cli.Context, edit func(list []string, addr string) ([]string, error)) error {
	if c.NArg() != 1 {
		return fmt.Errorf("want one address, got %d arguments", c.NArg())
	}
	h, err := home(c)
	if err != nil {
		return err
	}
	if err := h.Check(); err != nil {
		return err
	}
	cfg, err := configs.LoadConfig(h.ConfigPath())
	if err != nil {
		return err
	}
	list, err := edit(slices.Clone(cfg.P2P.Bootstrap), c.Args().First())
	if err != nil {
		return err
	}
	cfg.P2P.Bootstrap = list
	if err := cfg.Validate(); err != nil {
		return err
	}
	if err := configs.WriteConfig(h.ConfigPath(), cfg); err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "bootstrap list now has %d peers (restart the node to use it)\n", len(list))
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
