package core

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/training/round"
)

// ErrSeed is returned (wrapped) by Seed for snapshots it cannot use.
var ErrSeed = errors.New("core: snapshots do not lead to the core's state")

// Snapshot is one closed round as a restart rebuilds it from the store: what closing the
// round again needs.
type Snapshot struct {
	Pre    round.State        // the model state before the close; Pre.Round is the round
	Ledger *incentives.State  // the ledger in force at its start (Ledger.Round == Pre.Round)
	Record *incentives.Record // the round's committed record
	// Contributions are the ones Record lists, joined from their stored shards
	// (JoinShards), this node's own included. An entry without one here is fetched by CID
	// when a repair needs it.
	Contributions []round.Contribution
	// Vote is the signed record this node published for the round, its vote, as it kept
	// it (nil: none kept).
	Vote []byte
}

// Seed gives a Core that New made on a restart the rounds closed just before its state,
// oldest first, so that it can repair them as a Core that never stopped would: each
// becomes a closed round open to repair. A round's vote is the one the node kept
// (Snapshot.Vote), resent as those exact bytes when a resend is due, and counted as its
// vote; a round without one kept (a late joiner's, or a home that kept none) has no vote
// of this node: nothing is signed again for a round, since a record of its repaired list
// would be a second, different vote. Only the last Depth are kept. The snapshots must be consecutive rounds ending at the round
// before New's state, chained by their records' roots up to the ledger's head, each
// ledger at its round, each contribution one its record lists; Seed must come before any
// event. It keeps the snapshots' states, ledgers and contributions (the caller must not
// modify them). On an error nothing changes.
func (c *Core) Seed(snaps []Snapshot) error {
	if len(c.agree.closed) > 0 || len(c.rounds) > 0 || len(c.own) > 0 {
		return fmt.Errorf("%w: seeded after events", ErrSeed)
	}
	if n := uint64(len(snaps)); n > c.cfg.Depth {
		snaps = snaps[n-c.cfg.Depth:]
	}
	if uint64(len(snaps)) > c.nextClose {
		return fmt.Errorf("%w: %d rounds before round %d", ErrSeed, len(snaps), c.nextClose)
	}
	closed := make(map[uint64]*closedRound, len(snaps))
	voted := make(map[uint64]*incentives.Record, len(snaps))
	next, like := c.nextClose-uint64(len(snaps)), c.m.State()
	for i := range snaps {
		cr, vote, err := c.seedRound(&snaps[i], next+uint64(i), like)
		if err != nil {
			return err
		}
		closed[next+uint64(i)], voted[next+uint64(i)] = cr, vote
	}
	if len(snaps) > 0 && !bytes.Equal(snaps[len(snaps)-1].Record.NewRoot, c.ledger.Head) {
		return fmt.Errorf("%w: the last record's root is not the ledger's head", ErrSeed)
	}
	c.agree.gen++
	for r, cr := range closed {
		c.agree.closed[r] = cr
		c.agree.votes[r] = map[string]*incentives.Record{}
		if v := voted[r]; v != nil {
			c.agree.votes[r][c.cfg.Self] = v
		}
	}
	return nil
}

// seedVote decodes the vote kept for round r: a signed record of this node, network and
// run, for r. Nil bytes are no vote.
func (c *Core) seedVote(vote []byte, r uint64) (*incentives.Record, error) {
	if vote == nil {
		return nil, nil
	}
	sr, rec, err := incentives.DecodeSignedRecord(vote)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: round %d: vote: %v", ErrSeed, r, err)
	case !sr.IsVote() || sr.Signer != c.cfg.Self || sr.Network != c.cfg.Network || sr.Run != c.cfg.Run || rec.Round != r:
		return nil, fmt.Errorf("%w: round %d: the vote kept is of %s for round %d of %s/%s", ErrSeed, r, sr.Signer, rec.Round, sr.Network, sr.Run)
	}
	return rec, nil
}

// seedRound checks one snapshot of round r and makes its closed round; it also returns
// the record of the vote kept (nil: none). Until the votes seen carry a quorum, the round
// stands on its committed record, not on the vote: after a repair, or a catch-up that
// replaced the node's rounds with its peers' (a vote from a lineage it left), falling back
// to the vote would close again what it just took from them. The vote is still counted as
// its vote and resent as kept, never signed again.
func (c *Core) seedRound(s *Snapshot, r uint64, like round.State) (*closedRound, *incentives.Record, error) {
	rec := s.Record
	switch {
	case s.Ledger == nil || rec == nil:
		return nil, nil, fmt.Errorf("%w: round %d: no ledger or record", ErrSeed, r)
	case s.Pre.Round != r || s.Ledger.Round != r || rec.Round != r:
		return nil, nil, fmt.Errorf("%w: round %d: state of %d, ledger of %d, record of %d", ErrSeed, r, s.Pre.Round, s.Ledger.Round, rec.Round)
	case !bytes.Equal(rec.PrevRoot, s.Ledger.Head):
		return nil, nil, fmt.Errorf("%w: round %d: the record does not follow the ledger", ErrSeed, r)
	}
	if !sameLayout(s.Pre, like) {
		return nil, nil, fmt.Errorf("%w: round %d: the state is not of the model's tensors", ErrSeed, r)
	}
	vote, err := c.seedVote(s.Vote, r)
	if err != nil {
		return nil, nil, err
	}
	cr := &closedRound{pre: s.Pre, ledger: s.Ledger, held: map[string]*heldContribution{}, record: rec, own: rec,
		basis: fingerprint(rec.Contributions, rec.Evidence)}
	if vote != nil {
		cr.vote = Message{Kind: KindRecords, Data: bytes.Clone(s.Vote)}
	}
	for _, ct := range s.Contributions {
		i := slices.IndexFunc(rec.Contributions, func(e incentives.Contribution) bool { return e.Peer == ct.Peer })
		if ct.Round != r || ct.Msg == nil || i < 0 {
			return nil, nil, fmt.Errorf("%w: round %d: a contribution of %s the record does not list", ErrSeed, r, ct.Peer)
		}
		cr.hold(&heldContribution{peer: ct.Peer, cids: rec.Contributions[i].Shards, msg: ct.Msg})
	}
	return cr, vote, nil
}

// sameLayout reports whether st has like's tensors (names, shapes, sizes) and a momentum
// of θ's size or none.
func sameLayout(st, like round.State) bool {
	if len(st.Params) != len(like.Params) {
		return false
	}
	n := 0
	for i, t := range st.Params {
		w := like.Params[i]
		if t.Name != w.Name || !slices.Equal(t.Shape, w.Shape) || len(t.Data) != len(w.Data) {
			return false
		}
		n += len(t.Data)
	}
	return st.Momentum == nil || len(st.Momentum) == n
}
