package node

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/node/checkpoint"
	"github.com/lowband/lowband/node/core"
	"github.com/lowband/lowband/node/store"
	"github.com/lowband/lowband/training/round"
	"github.com/lowband/lowband/verify"
)

// ReplayError is a stored round that does not replay: its record or shards are missing or
// damaged, or closing it again does not give the root its record says.
type ReplayError struct {
	Round uint64
	Err   error
}

func (e *ReplayError) Error() string { return fmt.Sprintf("replaying round %d: %v", e.Round, e.Err) }
func (e *ReplayError) Unwrap() error { return e.Err }

// roundSource is where a replay reads stored rounds: a home's store, or what an audit
// reads. Record gives nil, nil for a round it does not hold.
type roundSource interface {
	Record(round uint64) (*incentives.Record, error)
	Shards(round uint64) ([]store.Shard, error)
}

var _ roundSource = (*store.Store)(nil)

// replayer closes stored rounds again: the network's params, the round configuration, and
// what the stored shards must name.
type replayer struct {
	p            *Params
	cfg          round.Config
	network, run string
	maxPayload   int
	// keep is how many of the last rounds replayed are kept in snaps, for a core to repair
	// them (core.Seed); a replay starts early enough for them when a checkpoint allows.
	keep  uint64
	snaps []core.Snapshot
}

// newReplayer replays the rounds of the network of s; self names the node whose round
// configuration it uses (any, for an audit: closing a round does not depend on it).
func newReplayer(p *Params, s *configs.Spec, self string) *replayer {
	return &replayer{p: p, cfg: p.RoundConfig(self, 1), network: s.NetworkID(), run: s.Run, maxPayload: s.Training.Compression.MaxShardBytes}
}

// replayFrom closes the stored rounds from st (the global state of a checkpoint or
// genesis) and led (the ledger of the same round) up to round to, exclusive: for each, its
// record and shards from s, the contributions joined (core.JoinShards) and weighed by the
// ledger in force (core.WeightsOf), the round closed (round.Step) and the record applied.
// The model root must be the record's, the close must aggregate every contribution the
// record lists and leave out whole exactly those it marks Dropped (sameKept), and applying
// the record must give its NewRoot, at every round (a *ReplayError otherwise).
func (rp *replayer) replayFrom(s roundSource, st round.State, led *incentives.State, to uint64) (round.State, *incentives.State, error) {
	for r := st.Round; r < to; r++ {
		rec, err := s.Record(r)
		if err == nil && rec == nil {
			err = errors.New("no record stored")
		}
		if err != nil {
			return st, led, &ReplayError{Round: r, Err: err}
		}
		if st, led, err = rp.replayOne(s, st, led, rec); err != nil {
			return st, led, &ReplayError{Round: r, Err: err}
		}
	}
	return st, led, nil
}

// replayOne closes the round of rec again from st and led.
func (rp *replayer) replayOne(s roundSource, st round.State, led *incentives.State, rec *incentives.Record) (round.State, *incentives.State, error) {
	next, nextLed, _, err := rp.replayRound(s, st, led, rec)
	return next, nextLed, err
}

// replayRound is replayOne, also returning the ledger's events of the round.
func (rp *replayer) replayRound(s roundSource, st round.State, led *incentives.State, rec *incentives.Record) (round.State, *incentives.State, []incentives.Event, error) {
	contribs, err := rp.contributions(s, rec)
	if err != nil {
		return st, led, nil, err
	}
	peers := make([]string, len(rec.Contributions))
	for i, c := range rec.Contributions {
		peers[i] = c.Peer
	}
	next, closed, err := round.Step(rp.cfg, st, contribs, core.WeightsOf(led, peers))
	if err != nil {
		return st, led, nil, err
	}
	if root := next.Root(); !bytes.Equal(root[:], rec.ModelRoot) {
		return st, led, nil, fmt.Errorf("the stored shards give model root %x, the record says %x", root[:8], rec.ModelRoot[:min(8, len(rec.ModelRoot))])
	}
	if err := sameKept(rec, &closed); err != nil {
		return st, led, nil, err
	}
	nextLed, events, err := led.Apply(rec, rp.p.Checker)
	if err != nil {
		return st, led, nil, err
	}
	rp.snapshot(core.Snapshot{Pre: st, Ledger: led, Record: rec, Contributions: contribs})
	return next, nextLed, events, nil
}

// snapshot keeps sn among the last keep rounds replayed.
func (rp *replayer) snapshot(sn core.Snapshot) {
	if rp.keep == 0 {
		return
	}
	if uint64(len(rp.snaps)) == rp.keep {
		rp.snaps[0] = core.Snapshot{} // let its state go
		rp.snaps = rp.snaps[1:]
	}
	rp.snaps = append(rp.snaps, sn)
}

// contributions reads the stored shards of rec's round and joins each contribution it
// lists: every shard decoded (verify.UnmarshalShard, with the network's payload cap), of
// the round, network, run, peer and index it is stored under, its payload CID one the
// record lists for that peer, every listed CID there.
func (rp *replayer) contributions(s roundSource, rec *incentives.Record) ([]round.Contribution, error) {
	stored, err := s.Shards(rec.Round)
	if err != nil {
		return nil, err
	}
	byPeer := map[string][]*verify.Shard{}
	for _, sh := range stored {
		v, err := verify.UnmarshalShard(sh.Data, rp.maxPayload)
		if err != nil {
			return nil, fmt.Errorf("shard %d of %s: %w", sh.Index, sh.Peer, err)
		}
		h := &v.Header
		if !bytes.Equal(verify.PayloadCID(v.Payload), h.PayloadCID) {
			return nil, fmt.Errorf("shard %d of %s: its payload does not hash to its CID", sh.Index, sh.Peer)
		}
		if h.Round != rec.Round || h.Peer != sh.Peer || h.Index != sh.Index || h.Network != rp.network || h.Run != rp.run {
			return nil, fmt.Errorf("shard stored as %d of %s is %d of %s for round %d of %s/%s", sh.Index, sh.Peer, h.Index, h.Peer, h.Round, h.Network, h.Run)
		}
		byPeer[sh.Peer] = append(byPeer[sh.Peer], v)
	}
	out := make([]round.Contribution, 0, len(rec.Contributions))
	for _, c := range rec.Contributions {
		shards := byPeer[c.Peer]
		if err := sameCIDs(shards, c.Shards); err != nil {
			return nil, fmt.Errorf("contribution of %s: %w", c.Peer, err)
		}
		joined, err := core.JoinShards(shards, rp.p.Limits)
		if err != nil {
			return nil, err
		}
		out = append(out, joined)
	}
	return out, nil
}

// sameKept checks a record's inclusion list against what closing its round gave: every
// listed contribution aggregated (none jailed, weightless or undecodable), and marked
// Dropped exactly when the aggregation rule left it out whole. The ledger rewards by the
// flags, so a record that moves one, even under a root that follows from it, is refused
// as one whose model root does not match.
func sameKept(rec *incentives.Record, closed *round.Closed) error {
	if len(closed.Included) != len(rec.Contributions) {
		return fmt.Errorf("the record lists %d contributions, closing the round aggregates %d of them", len(rec.Contributions), len(closed.Included))
	}
	for i, e := range rec.Contributions {
		if closed.Included[i] != e.Peer { // both sorted by peer
			return fmt.Errorf("the record lists %s, closing the round does not aggregate it", e.Peer)
		}
		if _, dropped := slices.BinarySearch(closed.Dropped, e.Peer); dropped != e.Dropped {
			return fmt.Errorf("the record marks the contribution of %s dropped %v, the aggregation rule dropped it %v", e.Peer, e.Dropped, dropped)
		}
	}
	return nil
}

// sameCIDs checks that shards carry exactly the payload CIDs listed (sorted, distinct, as
// in a canonical record).
func sameCIDs(shards []*verify.Shard, listed [][]byte) error {
	if len(shards) != len(listed) {
		return fmt.Errorf("%d shards stored, the record lists %d", len(shards), len(listed))
	}
	for _, sh := range shards {
		if _, found := slices.BinarySearchFunc(listed, sh.Header.PayloadCID, bytes.Compare); !found {
			return fmt.Errorf("shard %d has a payload CID the record does not list", sh.Header.Index)
		}
	}
	return nil
}

// replayStart is where a replay starts: the latest checkpoint the store keeps at or
// before round to - keep (so that the replay passes the last keep rounds), else the
// oldest at or before round to, else genesis (init, θ_0, and the genesis ledger from the
// spec).
func (rp *replayer) replayStart(s *store.Store, lim checkpoint.Limits, init round.State, to uint64) (round.State, *incentives.State, uint64, error) {
	infos, err := s.Checkpoints()
	if err != nil {
		return round.State{}, nil, 0, err
	}
	i := latestAtOrBefore(infos, to-min(to, rp.keep))
	if i < 0 && len(infos) > 0 && infos[0].Round <= to {
		i = 0 // the oldest: the stored shards go back to it, not before
	}
	if i >= 0 {
		c, _, err := s.LoadCheckpoint(infos[i].Round, lim)
		if err != nil {
			return round.State{}, nil, 0, err
		}
		return c.Model, c.Ledger, c.Round, nil
	}
	led, err := rp.p.GenesisState()
	return init, led, 0, err
}

// latestAtOrBefore is the index of the latest of infos (oldest first) at or before round
// r, or -1.
func latestAtOrBefore(infos []store.CheckpointInfo, r uint64) int {
	for i := len(infos) - 1; i >= 0; i-- {
		if infos[i].Round <= r {
			return i
		}
	}
	return -1
}
