package core

import (
	"fmt"

	"github.com/lowband/lowband/training/round"
)

// Local returns this node's local state of the round machine, which no root covers (see
// round.Machine.Local): what a restart restores with Resume.
func (c *Core) Local() round.LocalState { return c.m.Local() }

// LocalShared is Local sharing what the machine holds (round.Machine.LocalShared): read it
// before the Core's next event.
func (c *Core) LocalShared() round.LocalState { return c.m.LocalShared() }

// Resume prepares a Core that New made on a restart, before Start: this node's local work
// goes on at round first, and the open rounds before it close without its contribution
// (round.Machine.SkipLocal: it may have signed shards for them before it stopped); the
// local state ls, when not nil, is restored (round.Machine.SetLocal). Start then returns
// nothing when first is beyond what may start at once: the start comes out of the close
// that allows it. On an error of ls, local work still goes on at first, without it.
func (c *Core) Resume(first uint64, ls *round.LocalState) error {
	if err := c.m.SkipLocal(first); err != nil {
		return fmt.Errorf("core: %w", err)
	}
	c.nextLocal = first
	if ls != nil {
		if err := c.m.SetLocal(*ls); err != nil {
			return fmt.Errorf("core: local state: %w", err)
		}
	}
	return nil
}
