package node

import (
	"fmt"

	"github.com/lowband/lowband/node/core"
	"github.com/lowband/lowband/node/store"
)

// commit persists a closed round: its record, the new ledger state, the events, the
// shards of the contributions it includes, the node's signed record (nil: none) and its
// vote (Commit.Vote) in one bbolt transaction; then it swaps the ledger state the API and the gossipsub application
// score read, so jailed and slashed peers are shed from then on. Called by the round loop
// only, before anything of the round is published.
func (l *ledger) commit(c *core.Commit, signed []byte, shards ...store.Shard) error {
	err := l.st.CommitRound(store.Round{Record: c.Record, State: c.State, Events: c.Events, Shards: shards, Signed: signed, Vote: c.Vote})
	if err != nil {
		return fmt.Errorf("committing round %d: %w", c.Record.Round, err)
	}
	l.state.Store(c.State)
	return nil
}

// repair persists closed rounds closed again: the store replaces the rounds from
// rp.From on by rp.Commits in one transaction (Store.Reorg), then the ledger state the
// API and the gossipsub application score read is swapped. Called by the round loop only,
// before the commit of the same Ready, if any.
// keep gives the signed record and the shards to store with each round (nil: none).
func (l *ledger) repair(rp *core.Repair, keep func(*core.Commit) ([]byte, []store.Shard)) error {
	if len(rp.Commits) == 0 {
		return fmt.Errorf("repairing from round %d: no rounds", rp.From)
	}
	rounds := make([]store.Round, len(rp.Commits))
	for i, c := range rp.Commits {
		rounds[i] = store.Round{Record: c.Record, State: c.State, Events: c.Events}
		if keep != nil {
			rounds[i].Signed, rounds[i].Shards = keep(c)
		}
	}
	if err := l.st.Reorg(rp.From, rounds...); err != nil {
		return fmt.Errorf("repairing rounds %d-%d: %w", rp.From, rp.From+uint64(len(rounds))-1, err)
	}
	l.state.Store(rounds[len(rounds)-1].State)
	return nil
}
