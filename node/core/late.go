package core

import (
	"fmt"

	"github.com/lowband/lowband/training/round"
)

// Local work that would come late. A round closes once every staked contribution is in
// (or at the adaptive deadline): nobody waits for a contribution of no stake, and a staked
// one only until the deadline. A node slower than its peers (a late joiner with no stake
// on a slower machine, or one that lost its share of a busy host) finishes its local work
// for round r after they closed r; included in its own close, its contribution gave it a
// state of its own to repair, and since each round's work began where the last one ended,
// it fell further behind round after round until it had to resync. So when peers carrying
// more than half of the voting power have closed the round of a local work (their
// records of that round say so), the work is dropped, before it begins or when it ends,
// and local work moves on to the next round: the node closes the rounds it skipped with
// its peers' contributions and stays within a round of them. Ready.Late names the rounds;
// nothing of the global state depends on it.

// peersClosed reports whether this node's peers closed round r, one it has not closed:
// the records it holds for r carry more than half of the voting power of its ledger (a
// signer whose vote on r was dropped, or whom evidence it holds accuses, counts none).
// Nothing it sends for r from now on is in their lists. The ledger is the one in force,
// that of round nextClose: a signer the rounds before r jail or slash still counts (a
// staked peer willing to lose its stake can make a node drop one round's work that a
// slower honest staker would have let in; it moves no root). The Core keeps records up to Depth rounds past the round after its next
// close (recordsUpTo), so it knows this while it is that close behind them; further behind,
// the head watch resyncs it.
func (c *Core) peersClosed(r uint64) bool {
	if r < c.nextClose {
		return false
	}
	total := c.ledger.TotalPower()
	var w uint64
	for signer := range c.agree.votes[r] {
		if !c.agree.twice[r][signer] && !c.accused(signer) {
			w += c.ledger.Power(signer) // at most total: no overflow
		}
	}
	return total > 0 && w > total-w
}

// accused reports whether evidence this node holds, not yet in a record, accuses peer:
// its power may be gone by the ledger that weighs the round, so its records move no
// local work.
func (c *Core) accused(peer string) bool {
	for _, m := range c.pendingMeta {
		if m.peer == peer {
			return true
		}
	}
	return false
}

// skipLate moves the next local work, r (under way or about to be handed out), past r:
// the work is dropped and r closes without this node's contribution.
func (c *Core) skipLate(r uint64, rd *Ready) error {
	if err := c.m.Abandon(); err != nil {
		return fmt.Errorf("core: %w", err)
	}
	if err := c.m.SkipLocal(r + 1); err != nil {
		return fmt.Errorf("core: %w", err)
	}
	c.nextLocal = r + 1
	rd.Late = append(rd.Late, r)
	return nil
}

// startChecked sets rd.Train to s, a start the machine just made (nil: none, rd.Train is
// left as it is), unless the node's peers closed its round already: then it skips that
// round (skipLate) and starts the next at once when the delay allows it, checked again.
func (c *Core) startChecked(s *round.Start, rd *Ready) error {
	for s != nil && c.peersClosed(s.Round) {
		if err := c.skipLate(s.Round, rd); err != nil {
			return err
		}
		s = nil
		if c.m.Startable() {
			st, err := c.m.Start()
			if err != nil {
				return fmt.Errorf("core: %w", err)
			}
			s = &st
		}
	}
	if s != nil {
		rd.Train = s
	}
	return nil
}
