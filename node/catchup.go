package node

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// catchUp brings a restarted node to its peers' head before its loop starts, when they
// are past it: the rounds of the repair window it resumed with whose committed record a
// majority of the voting power signed differently are closed again from the snapshot
// before the first of them (a repair, Store.Reorg), and every round after its head that a
// majority committed is closed again and committed (as a late joiner does), with the
// shards fetched by CID. When that cannot be done (the shards are gone, its head is
// before what the peers keep), it syncs the checkpoint a majority committed and replays
// from there (Store.JumpTo: its rounds before are dropped). Its core then starts at the
// head reached, seeded with the last rounds, its votes and its local state kept, its
// local work from the round its peers work on (never before the round a restart skips
// to). Without peers past it it starts where it resumed, as it does when the catch-up
// fails (logged): it still starts from its own committed state.
func (n *Node) catchUp(ctx context.Context) error {
	began, rp, j := time.Now(), n.train.resumed, n.newJoiner()
	h, past := j.wantRounds(ctx, func([]peer.ID) bool { return false }, n.train.loop.startWait)
	if !past || h < rp.state.Round {
		return nil
	}
	out, from, err := j.rebase(ctx, rp)
	if err == nil {
		err = j.forward(ctx, out)
	}
	if err == nil && out.state.Round > h {
		err = n.commitCaughtUp(out, from, rp.state.Round)
	} else if err = n.jump(ctx, rp, h, j); err == nil {
		out, from = j.got, j.got.ckpt.Round
	}
	if err != nil {
		n.log.Warn("catching up with the peers failed: starting from the committed state", "round", rp.state.Round, "err", err)
		return nil
	}
	if err := keptVotes(n.ledger.st, j.rep.snaps); err != nil {
		return err
	}
	first := max(rp.first, out.state.Round+uint64(n.train.params.round.Delay))
	next := resumePoint{state: out.state, ledger: out.ledger, first: first, local: rp.local, snaps: j.rep.snaps}
	if err := n.train.reset(next, n.log); err != nil {
		return fmt.Errorf("catching up: %w", err)
	}
	n.log.Info(fmt.Sprintf("caught up from round %d to round %d from round %d, fetched %d bytes in %.1f seconds",
		rp.state.Round, out.state.Round, from, j.bytes.Load(), time.Since(began).Seconds()),
		"from", rp.state.Round, "to", out.state.Round, "closed_again_from", from, "bytes", j.bytes.Load(), "first_local_round", first)
	return nil
}

// jump syncs the checkpoint at the peers' head h and the rounds after it (joiner.run)
// when it is past rp's head, and stores them in place of the node's rounds
// (Store.JumpTo); j then holds what it replayed.
func (n *Node) jump(ctx context.Context, rp resumePoint, h uint64, j *joiner) error {
	j.rep.snaps = nil
	got, err := j.run(ctx, h)
	if err != nil {
		return err
	}
	if got.ckpt == nil || got.ckpt.Round <= rp.state.Round {
		return fmt.Errorf("no checkpoint past round %d to sync", rp.state.Round)
	}
	if err := n.storeJoined(got, true); err != nil {
		return fmt.Errorf("catching up: %w", err)
	}
	j.got = got
	return nil
}

// rebase finds the first round of the snapshots rp resumed with whose majority record is
// not the stored one, and closes the window again from there with the majority's
// records; it returns what it replayed and the first round it starts from (rp's head
// when the window stands).
func (j *joiner) rebase(ctx context.Context, rp resumePoint) (*joined, uint64, error) {
	for i, sn := range rp.snaps {
		rec, signers, err := j.majority(ctx, sn.Pre.Round, sn.Ledger)
		if err != nil {
			return nil, 0, err
		}
		if bytes.Equal(rec.Marshal(), sn.Record.Marshal()) {
			continue
		}
		j.rep.snaps = slices.Clone(rp.snaps[:i])
		out := &joined{state: sn.Pre, ledger: sn.Ledger}
		if err := j.replay(ctx, out, rec, signers); err != nil {
			return nil, 0, err
		}
		for _, later := range rp.snaps[i+1:] {
			rec, signers, err := j.majority(ctx, later.Pre.Round, out.ledger)
			if err != nil {
				return nil, 0, err
			}
			if err := j.replay(ctx, out, rec, signers); err != nil {
				return nil, 0, err
			}
		}
		return out, sn.Pre.Round, nil
	}
	j.rep.snaps = slices.Clone(rp.snaps)
	return &joined{state: rp.state, ledger: rp.ledger}, rp.state.Round, nil
}

// commitCaughtUp persists a catch-up: the rounds from from to head (exclusive) replace
// the stored ones (Store.Reorg), the later ones are committed after them.
func (n *Node) commitCaughtUp(out *joined, from, head uint64) error {
	k := int(head - from)
	if k > 0 {
		if err := n.ledger.st.Reorg(from, out.rounds[:k]...); err != nil {
			return fmt.Errorf("catching up: %w", err)
		}
	}
	for _, r := range out.rounds[k:] {
		if err := n.ledger.st.Commit(r.Record, r.State, r.Events, r.Shards...); err != nil {
			return fmt.Errorf("catching up: %w", err)
		}
	}
	n.ledger.state.Store(out.ledger)
	return nil
}
