package core

import "github.com/lowband/lowband/training/round"

// Model returns the global round state in force: the first open round, θ and the outer
// momentum after the last close (what a checkpoint of that round holds). Its momentum is
// a copy; its parameters may be those the last close handed out (round.Machine.Snapshot),
// which nothing modifies: the caller must not either.
func (c *Core) Model() round.State { return c.m.Snapshot() }
