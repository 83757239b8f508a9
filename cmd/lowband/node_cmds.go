package main

import "github.com/urfave/cli/v2"

func initCommand() *cli.Command {
	return &cli.Command{Name: "init", Action: func(*cli.Context) error { return notBuilt("init") }}
}
func runCommand() *cli.Command {
	return &cli.Command{Name: "run", Action: func(*cli.Context) error { return notBuilt("run") }}
}
func idCommand() *cli.Command {
	return &cli.Command{Name: "id", Action: func(*cli.Context) error { return notBuilt("id") }}
}
func peersCommand() *cli.Command {
	return &cli.Command{Name: "peers", Action: func(*cli.Context) error { return notBuilt("peers") }}
}
func statusCommand() *cli.Command {
	return &cli.Command{Name: "status", Action: func(*cli.Context) error { return notBuilt("status") }}
}
func bootstrapCommand() *cli.Command {
	return &cli.Command{Name: "bootstrap", Action: func(*cli.Context) error { return notBuilt("bootstrap") }}
}
