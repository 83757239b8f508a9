// Command lowband runs a node of a permissionless training network.
package main

import "os"

func main() { os.Exit(runMain(os.Args, os.Stdout, os.Stderr)) }
