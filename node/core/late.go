package core

import (
	"fmt"
	"slices"

	"github.com/lowband/lowband/incentives"
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
// its peers' contributions. A start that would begin a round late is skipped too
// (startsLate), so that the node starts the next round with its peers. Ready.Late names
// the rounds; nothing of the global state depends on it.

// peersClosed reports whether this node's peers closed round r, one it has not closed:
// the records it holds for r carry more than half of the voting power of its ledger (a
// signer whose vote on r was dropped, or whom evidence it holds accuses, counts none).
// Nothing it sends for r from now on is in their lists. The ledger is the one in force,
// that of round nextClose: a signer the rounds before r jail or slash still counts (a
// staked peer willing to lose its stake can make a node drop one round's work that a
// slower honest staker would have let in; it moves no root). The Core keeps records up
// to Depth rounds past the round after its next close (recordsUpTo), so it knows this
// while it is that close behind them; further behind, the head watch resyncs it.
func (c *Core) peersClosed(r uint64) bool {
	return r >= c.nextClose && c.majorityOf(r, func(*incentives.Record) bool { return true })
}

// majorityOf reports whether the records held for round r that keep say so carry more than
// half of the voting power of the ledger in force, leaving out signers whose vote on r was
// dropped and those evidence this node holds accuses.
func (c *Core) majorityOf(r uint64, keep func(*incentives.Record) bool) bool {
	total := c.ledger.TotalPower()
	var w uint64
	for signer, rec := range c.agree.votes[r] {
		if !c.agree.twice[r][signer] && !c.accused(signer) && keep(rec) {
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

// startsLate reports whether local work for round s, about to start, starts a round or
// more after its peers started it, so that it would end after their close: they closed
// s; or, with the delay d, they closed s - d, which a node in step closes only once its
// own work for s - d + 1 is done, after their work for s began; or this node's
// contribution to the round it closed last was left out by them (realign: it came after
// their close). Skipping s, the node starts s + 1 as it closes s - d, about when they do,
// and its next contribution has their compute of the round it overlaps as well.
// Without the last two a node once a round behind (a slow spell, a joiner) stayed a round
// behind for good, every contribution after their close
// (TestSlowSpellThenInStepContributesAgain).
func (c *Core) startsLate(s uint64) bool {
	d := uint64(c.cfg.Round.Delay)
	return c.realign || c.peersClosed(s) || d > 0 && s >= d && c.peersClosed(s-d)
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
// left as it is), unless it starts late (startsLate): then it skips that round (skipLate)
// and starts the next at once when the delay allows it (startNext), checked again.
func (c *Core) startChecked(s *round.Start, rd *Ready) error {
	if s == nil {
		return nil
	}
	if !c.startsLate(s.Round) {
		rd.Train = s
		return nil
	}
	c.realign = false
	if err := c.skipLate(s.Round, rd); err != nil {
		return err
	}
	return c.startNext(rd)
}

// startNext starts the next local work when the delay allows it (startChecked).
func (c *Core) startNext(rd *Ready) error {
	if !c.m.Startable() {
		return nil
	}
	s, err := c.m.Start()
	if err != nil {
		return fmt.Errorf("core: %w", err)
	}
	return c.startChecked(&s, rd)
}

// leftOut reports whether the records held for round r that do not list this node carry
// more than half of the voting power (as peersClosed counts it): its contribution to r
// came after its peers closed r.
func (c *Core) leftOut(r uint64) bool {
	return c.majorityOf(r, func(rec *incentives.Record) bool {
		return !slices.ContainsFunc(rec.Contributions, func(e incentives.Contribution) bool { return e.Peer == c.cfg.Self })
	})
}
