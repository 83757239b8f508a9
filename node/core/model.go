package core

import "github.com/lowband/lowband/training/round"

// Model returns a copy of the global round state in force: the first open round, θ and the
// outer momentum after the last close (what a checkpoint of that round holds). The caller
// owns it; it shares nothing with the Core.
func (c *Core) Model() round.State { return c.m.State() }
