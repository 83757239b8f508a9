package node

import (
	"fmt"

	"github.com/lowband/lowband/node/core"
	"github.com/lowband/lowband/node/store"
)

// commit persists a closed round: its record, the new ledger state, the events, the
// shards of the contributions it includes and the node's signed record (nil: none) in one
// bbolt transaction; then it swaps the ledger state the API and the gossipsub application
// score read, so jailed and slashed peers are shed from then on. Called by the round loop
// only, before anything of the round is published.
func (l *ledger) commit(c *core.Commit, signed []byte, shards ...store.Shard) error {
	var err error
	if signed != nil {
		err = l.st.CommitSigned(signed, c.Record, c.State, c.Events, shards...)
	} else {
		err = l.st.Commit(c.Record, c.State, c.Events, shards...)
	}
	if err != nil {
		return fmt.Errorf("committing round %d: %w", c.Record.Round, err)
	}
	l.state.Store(c.State)
	return nil
}
