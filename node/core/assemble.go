package core

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/training/compress"
	"github.com/lowband/lowband/training/round"
	"github.com/lowband/lowband/verify"
)

// Reasons a peer's contribution is left out of a round (Summary.Rejected).
const (
	ReasonIncomplete   = "incomplete"   // shards missing at close, or shards disagreeing on their count
	ReasonJailed       = "jailed"       // the ledger has the peer jailed
	ReasonWeight       = "weight"       // unstaked, and the network gives unstaked peers no weight
	ReasonDecode       = "decode"       // the shards do not decode into the model's tensors
	ReasonCap          = "cap"          // beyond incentives.MaxContributions
	ReasonEquivocation = "equivocation" // the peer signed two different shards for one slot
	// ReasonFiltered: aggregated as an input of the rule, which left it out whole
	// (filtered_mean: beyond its radius). Unlike the others it stays in Summary.Included and
	// in the record (marked Dropped), and earns nothing.
	ReasonFiltered = "filtered"
)

// roundIn is what arrived for one open round, by peer.
type roundIn struct {
	peers    map[string]*assembly
	received powerSum  // of the counted contributions; cleared when one comes or goes
	since    time.Time // when the round first became closable
	ready    time.Time // when its deadline first let it close (aheadOfRecords)
	fetched  bool      // the missing slots were asked for
}

// assembly is one peer's shards for one round, by index.
type assembly struct {
	count   uint32
	slots   map[uint32]held
	done    bool      // all shards there, decoded and given to the machine
	at      time.Time // when it became done
	dropped string    // a reason, when the contribution is left out whatever arrives
	cids    [][]byte  // the payload CIDs (sorted), once done
	msg     *compress.Message
}

// held is one shard as it arrived, with its signer's bundle (for evidence).
type held struct {
	shard  *verify.Shard
	bundle []byte
}

// Shard takes a shard that passed every check (wire, bundle verified, signature by the
// attested key of the header's peer, content) with its signer's marshalled bundle.
//
// Shards are held per (round, peer) by index. A shard of a closed round inside the repair
// window is taken only when a pending repair wants its payload CID (see Record), this
// node's own included (a restarted node closes the rounds it skips without the shards it
// signed before it stopped, which its peers included); other shards for closed rounds,
// for a round past View's window, of this node, or of a new peer
// without voting power when incentives.MaxContributions peers already sent shards for the
// round, are ignored. A second, different shard for a slot
// already held is equivocation: the evidence is published once and kept for the next
// record, and the peer's contribution to the round is dropped. Shards disagreeing on their
// count drop the contribution too (that is no offence anyone can prove from one header).
// When all of a peer's shards are in, they are decoded and joined into its contribution.
func (c *Core) Shard(now time.Time, s *verify.Shard, bundle []byte) (Ready, error) {
	if err := c.checkShard(s); err != nil {
		return Ready{}, err
	}
	h := &s.Header
	r := h.Round
	if r < c.nextClose && r >= c.repairFrom() {
		return c.repairShard(s) // this node's own too: a restart closed them without it
	}
	if r < c.nextClose || r > c.nextLocal+c.cfg.Round.Window || h.Peer == c.cfg.Self {
		return Ready{}, nil
	}
	a, err := c.assembly(r, h.Peer)
	if a == nil || err != nil {
		return Ready{}, err
	}
	var rd Ready
	counted := a.counted()
	if err := c.hold(now, r, a, held{shard: s, bundle: bundle}, &rd); err != nil {
		return Ready{}, err
	}
	if a.counted() != counted {
		c.rounds[r].received = powerSum{}
	}
	return c.tryClose(now, rd)
}

// checkShard refuses what no validator passes, so that nothing below trips over it.
func (c *Core) checkShard(s *verify.Shard) error {
	if s == nil {
		return fmt.Errorf("%w: nil", ErrShard)
	}
	h := &s.Header
	switch {
	case h.Network != c.cfg.Network || h.Run != c.cfg.Run:
		return fmt.Errorf("%w: network %q run %q", ErrShard, h.Network, h.Run)
	case h.Count == 0 || h.Index >= h.Count:
		return fmt.Errorf("%w: index %d of %d", ErrShard, h.Index, h.Count)
	}
	return nil // the peer ID is checked once per round and peer, by assembly
}

// assembly returns peer's assembly for round r, making it if there is room: past
// incentives.MaxContributions peers, only for peers with voting power (at most the ledger's
// accounts), whom the inclusion list takes first anyway. A new peer's ID must be in form
// (ErrShard); checking it costs about as much as a signature, so it is checked only then.
func (c *Core) assembly(r uint64, peer string) (*assembly, error) {
	ri := c.rounds[r]
	if ri == nil {
		ri = &roundIn{peers: map[string]*assembly{}}
		c.rounds[r] = ri
	}
	if a := ri.peers[peer]; a != nil {
		return a, nil
	}
	if err := verify.CheckPeerID(peer); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrShard, err)
	}
	if len(ri.peers) >= incentives.MaxContributions && c.ledger.Power(peer) == 0 {
		return nil, nil
	}
	a := &assembly{slots: map[uint32]held{}}
	ri.peers[peer] = a
	return a, nil
}

// hold adds one shard to a peer's assembly and completes it when it can.
func (c *Core) hold(now time.Time, r uint64, a *assembly, in held, rd *Ready) error {
	h := &in.shard.Header
	if old, ok := a.slots[h.Index]; ok {
		if !sameHeader(&old.shard.Header, h) && a.dropped != ReasonEquivocation {
			ev := incentives.NewEquivocationOf(old.bundle, signed(old.shard), in.bundle, signed(in.shard))
			c.addEvidence(*ev)
			rd.Publish = append(rd.Publish, Message{Kind: KindEvidence, Data: ev.Marshal()})
			a.drop(ReasonEquivocation)
		}
		return nil
	}
	if h.Count > c.maxShards {
		a.drop(ReasonIncomplete)
		return nil
	}
	a.slots[h.Index] = in
	switch {
	case a.count == 0:
		a.count = h.Count
	case a.count != h.Count:
		a.drop(ReasonIncomplete)
	}
	if a.dropped != "" || a.done || uint32(len(a.slots)) != a.count {
		return nil
	}
	return c.complete(now, r, h.Peer, a)
}

// clockOf is when round r's deadline started counting: when this node's own local work
// for r ended, or, when later, when the last contribution it included in round r-1
// arrived; with no local work of its own for r (a restart, after Finish), when r could
// close (since). A node whose work runs ahead of its peers' (more CPU, a lighter load)
// otherwise spent its deadline for r while it waited for their contributions to r-1, then
// closed r at the deadline's maximum with the few contributions it had, before the others
// had sent theirs. The last arrival, not the close, is the peers' pace: a round that
// waited for a silent peer until its deadline had the others' contributions long before,
// and theirs to r come as early.
func (c *Core) clockOf(r uint64, ri *roundIn) time.Time {
	o := c.own[r]
	if o == nil {
		return ri.since
	}
	if r == c.nextClose && c.lastIn.After(o.done) {
		return c.lastIn
	}
	return o.done
}

// arrivalDelayFrom is the start an arrival's delay to round r is measured from: round r's
// clock (clockOf) once round r-1 closed, this node's own work's end before, or now
// (delay 0) for a contribution that arrived before that work ended.
func (c *Core) arrivalDelayFrom(now time.Time, r uint64) time.Time {
	if c.own[r] == nil {
		return now
	}
	return c.clockOf(r, nil) // with own work, clockOf never reads ri
}

// lastIn is when the last of the contributions the round's record includes (dropped by
// the rule aside) arrived, counting only peers with voting power by led: a contribution
// left out, or of a peer without a vote, moves no clock (a free identity arriving just
// before every close would otherwise make each round wait its whole deadline). Zero if
// none.
func (ri *roundIn) lastIn(included []incentives.Contribution, led *incentives.State) time.Time {
	var last time.Time
	for _, k := range included {
		a := ri.peers[k.Peer]
		if a == nil || k.Dropped || !a.counted() || led.Power(k.Peer) == 0 {
			continue
		}
		last = later(last, a.at)
	}
	return last
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// counted reports whether the contribution is whole and not dropped: it counts towards the
// round's received stake.
func (a *assembly) counted() bool { return a.done && a.dropped == "" }

// drop leaves the contribution out; equivocation overrides another reason. The shards stay,
// so that a later conflicting shard is still recognised.
func (a *assembly) drop(reason string) {
	if a.dropped == "" || reason == ReasonEquivocation {
		a.dropped = reason
	}
}

// complete decodes and joins a peer's shards and gives the contribution to the machine.
func (c *Core) complete(now time.Time, r uint64, peer string, a *assembly) error {
	shards := make([]*verify.Shard, 0, a.count)
	for i := range a.count {
		shards = append(shards, a.slots[i].shard)
	}
	ct, err := JoinShards(shards, c.cfg.Limits)
	if err != nil {
		a.drop(ReasonDecode)
		return nil
	}
	ct.Weight = 1
	if err := c.m.Receive(ct); err != nil {
		return fmt.Errorf("core: contribution of %s to round %d: %w", peer, r, err)
	}
	a.done, a.at, a.cids, a.msg = true, now, shardCIDs(shards), ct.Msg
	c.deadline.Observe(r, peer, c.arrivalDelayFrom(now, r), now)
	return nil
}

// ErrJoin is returned (wrapped) by JoinShards for shards that do not make one contribution.
var ErrJoin = errors.New("core: shards do not join into a contribution")

// JoinShards makes one contribution from its verified shards, in any order: they must be of
// one round and one peer, agree on their count and hold every index once (at most
// incentives.MaxShardsPerContribution); their payloads are decoded with lim and joined.
// Weight is left 0 for the caller. Errors wrap ErrJoin.
func JoinShards(shards []*verify.Shard, lim compress.Limits) (round.Contribution, error) {
	if len(shards) == 0 || len(shards) > incentives.MaxShardsPerContribution || shards[0] == nil {
		return round.Contribution{}, fmt.Errorf("%w: %d shards", ErrJoin, len(shards))
	}
	h0 := shards[0].Header
	byIndex := make([]*verify.Shard, len(shards))
	for _, sh := range shards {
		if sh == nil {
			return round.Contribution{}, fmt.Errorf("%w: a nil shard", ErrJoin)
		}
		h := &sh.Header
		switch {
		case h.Round != h0.Round || h.Peer != h0.Peer:
			return round.Contribution{}, fmt.Errorf("%w: shards of round %d of %s and of round %d of %s", ErrJoin, h0.Round, h0.Peer, h.Round, h.Peer)
		case h.Count != uint32(len(shards)) || h.Index >= h.Count:
			return round.Contribution{}, fmt.Errorf("%w: shard %d of %d among %d shards", ErrJoin, h.Index, h.Count, len(shards))
		case byIndex[h.Index] != nil:
			return round.Contribution{}, fmt.Errorf("%w: shard %d twice", ErrJoin, h.Index)
		}
		byIndex[h.Index] = sh
	}
	parts := make([]*compress.Message, len(byIndex))
	for i, sh := range byIndex {
		m, err := compress.DecodeShard(sh.Payload, lim)
		if err != nil {
			return round.Contribution{}, fmt.Errorf("%w: shard %d of %s, round %d: %w", ErrJoin, i, h0.Peer, h0.Round, err)
		}
		parts[i] = m
	}
	msg, err := compress.Join(parts)
	if err != nil {
		return round.Contribution{}, fmt.Errorf("%w: %s, round %d: %w", ErrJoin, h0.Peer, h0.Round, err)
	}
	return round.Contribution{Round: h0.Round, Peer: h0.Peer, Msg: msg}, nil
}

// shardCIDs returns the payload CIDs of shards, sorted.
func shardCIDs(shards []*verify.Shard) [][]byte {
	cids := make([][]byte, 0, len(shards))
	for _, sh := range shards {
		cids = append(cids, sh.Header.PayloadCID)
	}
	slices.SortFunc(cids, bytes.Compare)
	return cids
}

func signed(s *verify.Shard) incentives.SignedHeader {
	return incentives.SignedHeader{Header: s.Header, Sig: s.Sig}
}

func sameHeader(a, b *verify.ShardHeader) bool {
	return a.Network == b.Network && a.Run == b.Run && a.Round == b.Round && a.Peer == b.Peer &&
		a.Index == b.Index && a.Count == b.Count && bytes.Equal(a.BundleHash, b.BundleHash) &&
		bytes.Equal(a.PayloadCID, b.PayloadCID)
}

// maxShardsFor bounds the shard count of one contribution to a model of n values in k
// tensors: the shards of a message (packed greedily, so two consecutive shards hold more
// than the smallest shard cap) of 8 bytes per value, with room for each tensor's framing,
// and at most what a record lists for one contribution (incentives.MaxShardsPerContribution).
// An honest compressed contribution needs far fewer.
func maxShardsFor(n, k int) uint32 {
	budget := compress.MinShardBytes / 2
	return uint32(min(2*(8*n+1024*k)/budget+2, incentives.MaxShardsPerContribution))
}

// wants lists the slots still missing for round r: the missing indexes of the peers whose
// shards are partly there, and index 0 of each peer with voting power that sent nothing.
// At most maxWants.
func (c *Core) wants(r uint64) []Want {
	var out []Want
	ri := c.rounds[r]
	var peers []string
	if ri != nil {
		for p := range ri.peers {
			peers = append(peers, p)
		}
		slices.Sort(peers)
	}
	for _, p := range peers {
		a := ri.peers[p]
		for i := uint32(0); a.dropped == "" && !a.done && i < a.count && len(out) < maxWants; i++ {
			if _, ok := a.slots[i]; !ok {
				out = append(out, Want{Round: r, Peer: p, Index: i})
			}
		}
	}
	for _, acc := range c.ledger.Accounts {
		if len(out) >= maxWants {
			break
		}
		if _, sent := ri.peerOf(acc.Peer); !sent && acc.Peer != c.cfg.Self && c.ledger.Power(acc.Peer) > 0 {
			out = append(out, Want{Round: r, Peer: acc.Peer})
		}
	}
	return out
}

// maxWants bounds the slots asked for per round.
const maxWants = 256

func (ri *roundIn) peerOf(peer string) (*assembly, bool) {
	if ri == nil {
		return nil, false
	}
	a, ok := ri.peers[peer]
	return a, ok
}
