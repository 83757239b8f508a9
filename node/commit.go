package node

import (
	"fmt"

	"github.com/lowband/lowband/node/core"
	"github.com/lowband/lowband/node/store"
)

// commit persists a closed round: its record, the new ledger state, the events and the
// shards of the contributions it includes in one bbolt transaction; then it swaps the ledger state the API and the gossipsub application
// score read, so jailed and slashed peers are shed from then on. Called by the round loop
// only, before anything of the round is published.
func (l *ledger) commit(c *core.Commit, shards ...store.Shard) error {
	if err := l.st.Commit(c.Record, c.State, c.Events, shards...); err != nil {
		return fmt.Errorf("committing round %d: %w", c.Record.Round, err)
	}
	l.state.Store(c.State)
	return nil
}

// repair persists closed rounds closed again: the store replaces the rounds from
// rp.From on by rp.Commits in one transaction (Store.Reorg), then the ledger state the
// API and the gossipsub application score read is swapped. Called by the round loop only,
// before the commit of the same Ready, if any.
func (l *ledger) repair(rp *core.Repair, shards [][]store.Shard) error {
	if len(rp.Commits) == 0 {
		return fmt.Errorf("repairing from round %d: no rounds", rp.From)
	}
	rounds := make([]store.Round, len(rp.Commits))
	for i, c := range rp.Commits {
		rounds[i] = store.Round{Record: c.Record, State: c.State, Events: c.Events}
		if i < len(shards) {
			rounds[i].Shards = shards[i]
		}
	}
	if err := l.st.Reorg(rp.From, rounds...); err != nil {
		return fmt.Errorf("repairing rounds %d-%d: %w", rp.From, rp.From+uint64(len(rounds))-1, err)
	}
	l.state.Store(rounds[len(rounds)-1].State)
	return nil
}
