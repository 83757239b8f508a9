package node

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/node/checkpoint"
	"github.com/lowband/lowband/node/store"
	"github.com/lowband/lowband/training/round"
)

// Bounds of a late join.
const (
	joinPoll     = 500 * time.Millisecond // between asks for the peers' heads
	joinPeers    = 16                     // peers asked for heads, records and shards
	joinMaxPeers = 1024                   // at most, when joinPeers carry too little voting power (askOrder)
	joinAskWait  = 20 * time.Second       // for the answers of one ask of many peers (askAll)
	joinParallel = 8                      // requests in flight
	joinRetry    = 5 * time.Second        // after a join that failed
	// joinWait is how long a node that is not a genesis peer looks for peers past genesis
	// before it starts at genesis when it cannot ask every genesis peer (a genesis peer
	// waits as long as the loop waits for the others).
	joinWait = time.Minute
)

// errNoMajority: the committed records of a round that peers sent carry no majority of
// the voting power (the round is not closed yet, or the peers disagree).
var errNoMajority = errors.New("no record of the round carries a majority of the voting power")

// JoinStatus is how this node joined a run already under way, for /status.
type JoinStatus struct {
	Round      uint64  `json:"round"`      // the first open round when it joined
	Checkpoint uint64  `json:"checkpoint"` // the round of the checkpoint synced (0: replayed from genesis)
	Replayed   int     `json:"replayed"`   // rounds closed again after the checkpoint
	Bytes      int64   `json:"bytes"`      // fetched: the checkpoint, records and shards
	Seconds    float64 `json:"seconds"`    // from the first ask to the core in force
}

// joiner brings a node whose store is at genesis into a run already past it: from the
// committed records of its peers it finds the last checkpoint whose root a majority of
// the voting power committed, syncs and verifies it, and closes every round after it
// again (the restart's replay, with the shards fetched by CID), each round's record
// being the one a majority of the voting power committed.
type joiner struct {
	n     *Node
	fetch *fetchClient
	rep   *replayer
	peers []peer.ID // asked, in turn
	bytes atomic.Int64
	got   *joined // what a catch-up's jump stored
	// trust (a catch-up: the node's own committed ledger; a join: the genesis ledger)
	// must also give the signers of a synced checkpoint's record more than half of its
	// voting power: a checkpoint's own ledger, which its signers chose, cannot vouch for
	// them alone. Stake is never added after genesis (only slashed), so the genesis
	// stakers holding most of it are the only ones who can vouch for a joiner's head.
	trust *incentives.State
	// follow are the peers whose lineage a catch-up follows through the rounds whose
	// committed records no majority of the voting power signed: those that committed the
	// record of most power at the round the node compared itself with (lineageOf); nil
	// outside such a catch-up.
	follow []peer.ID
	// stakers are the peers with voting power at genesis, the only ones ever to vote
	// (voters); nil: every peer is asked.
	stakers map[peer.ID]bool
	self    peer.ID // this node
	// own serves the node's own committed records (ownCommitted); nil: none (a node
	// that committed no round asks in plain).
	own roundServer
	// notHeld are the peers that answered an ask of askAll's that they hold no such
	// object (for a committed record: they closed no round), from all asks since it was
	// last cleared; nil until one does.
	notHeld map[peer.ID]bool
}

// joined is what a join found: the checkpoint it starts from (nil: genesis), the rounds
// replayed after it, and the state and ledger they lead to.
type joined struct {
	ckpt   *checkpoint.Checkpoint
	rounds []store.Round
	state  round.State
	ledger *incentives.State
}

// peerHead is a peer's committed record of its last closed round.
type peerHead struct {
	from peer.ID
	rec  *incentives.Record
	data []byte // the signed record as it came
}

// askAll asks every peer for r, joinParallel at a time, and returns the answers that came
// and the peers that refused the request outright (an error other than the ask's time
// running out: a build that does not know the request kind resets the stream).
func (j *joiner) askAll(ctx context.Context, peers []peer.ID, r fetchRequest) (map[peer.ID][]byte, []peer.ID) {
	ctx, cancel := context.WithTimeout(ctx, joinAskWait) // peers that stall hold up no more than this
	defer cancel()
	out := map[peer.ID][]byte{}
	var refused []peer.ID
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, joinParallel)
	for _, p := range peers {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			data, err := j.fetch.fetch(ctx, p, r)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				j.n.log.Debug("joining: no answer", "peer", p.ShortString(), "kind", r.kind, "err", err)
				switch {
				case errors.Is(err, errNotHeld):
					if j.notHeld == nil {
						j.notHeld = map[peer.ID]bool{}
					}
					j.notHeld[p] = true
				case !errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
					refused = append(refused, p)
				}
				return
			}
			j.bytes.Add(int64(len(data)))
			out[p] = data
		}()
	}
	wg.Wait()
	return out, refused
}

// committed asks the peers for their committed records of round r (headRound: of their
// last closed round) and keeps those signed by the peer asked, for this network and run,
// of round r. Only the peers with voting power at genesis are asked (when j.stakers is
// set): no other key ever has a vote, so its record neither weighs nor breaks a tie nor is
// followed, and one that stalls would hold every ask up for joinAskWait. A node that
// committed round r itself sends its record's digest (fetchCommittedSame): the peers that
// committed the same record answer with their signature alone.
func (j *joiner) committed(ctx context.Context, r uint64) []peerHead {
	var out []peerHead
	answers, own := j.askCommitted(ctx, r)
	for p, data := range answers {
		data = fromShort(data, own, p.String())
		sr, rec, err := incentives.DecodeSignedRecord(data)
		if err == nil {
			err = sr.Verify()
		}
		switch {
		case err != nil, sr.Signer != p.String(), sr.Network != j.rep.network, sr.Run != j.rep.run:
			j.n.log.Debug("joining: a committed record refused", "peer", p.ShortString(), "err", err)
		case r == headRound || rec.Round == r:
			out = append(out, peerHead{from: p, rec: rec, data: data})
		}
	}
	slices.SortFunc(out, func(a, b peerHead) int { return cmp.Compare(a.from, b.from) })
	return out
}

// askCommitted asks the voters for their committed records of round r: with the digest
// of the node's own record of r when it has one (fetchCommittedSame), and then, in plain
// (fetchCommitted), the peers that refused that request. A peer that refused it and
// answered in plain is a build from before it (not a peer that was restarting or rate
// limiting): it is asked in plain for plainFor. It returns the answers and the node's own
// record.
func (j *joiner) askCommitted(ctx context.Context, r uint64) (map[peer.ID][]byte, *incentives.SignedRecord) {
	own := j.ownCommitted(r)
	if own == nil || j.n == nil {
		out, _ := j.askAll(ctx, j.voters(), committedRequest(r))
		return out, own
	}
	now := time.Now()
	var short, plain []peer.ID
	for _, p := range j.voters() {
		if until, ok := j.n.plainCommitted.Load(p); ok && now.Before(until.(time.Time)) {
			plain = append(plain, p)
		} else {
			short = append(short, p)
		}
	}
	out, refused := j.askAll(ctx, short, committedSameRequest(r, incentives.RecordDigest(own.Record)))
	more, _ := j.askAll(ctx, append(plain, refused...), committedRequest(r))
	for _, p := range refused {
		if _, ok := more[p]; ok {
			j.n.plainCommitted.Store(p, now.Add(plainFor))
		}
	}
	maps.Copy(out, more)
	return out, own
}

// plainFor is how long a peer that refused fetchCommittedSame but answered in plain is
// asked in plain (it may have been upgraded meanwhile).
const plainFor = time.Hour

// ownCommitted is the node's own signed record of round r (headRound: of its last closed
// round) as it committed it; nil if it has none (a joiner).
func (j *joiner) ownCommitted(r uint64) *incentives.SignedRecord {
	if j.own == nil {
		return nil
	}
	sr, _, err := incentives.DecodeSignedRecord(j.own.committed(r))
	if err != nil {
		return nil
	}
	return sr
}

// voters are the peers to ask for committed records: j.peers, less those without voting
// power at genesis when j.stakers is set. Stake is never added after genesis, only
// slashed, so no ledger of any lineage gives one of them a vote; a peer slashed since
// genesis is still asked: a rewind or a repair weighs rounds before its slash by ledgers
// in which it votes.
func (j *joiner) voters() []peer.ID {
	if j.stakers == nil {
		return j.peers
	}
	return slices.DeleteFunc(slices.Clone(j.peers), func(p peer.ID) bool { return !j.stakers[p] })
}

// headOfPower is the highest round that heads carrying more than half of led's voting
// power reach (each peer once, weighed by led); false when the heads that answered carry
// no such majority. Peers without power, however far ahead they claim to be, move nothing.
func headOfPower(heads []headRef, led *incentives.State) (uint64, bool) {
	hs := slices.Clone(heads)
	slices.SortFunc(hs, func(a, b headRef) int { return cmp.Compare(b.round, a.round) })
	var w uint64
	seen := map[peer.ID]bool{}
	for _, h := range hs {
		if seen[h.from] {
			continue
		}
		seen[h.from] = true
		if w += led.Power(h.from.String()); 2*w > led.TotalPower() {
			return h.round, true
		}
	}
	return 0, false
}

// majority is round r's record that a majority of the voting power by led committed, and
// its signers. In a catch-up that follows a lineage (j.follow), a round without such a
// record gives the record the followed peers committed, when every one of them that
// answered committed the same.
func (j *joiner) majority(ctx context.Context, r uint64, led *incentives.State) (*incentives.Record, []peer.ID, error) {
	heads := j.committed(ctx, r)
	rec, signers, err := majorityOf(heads, led, r)
	if errors.Is(err, errNoMajority) && len(j.follow) > 0 {
		return followOf(heads, j.follow, r)
	}
	return rec, signers, err
}

// majorityOf is majority over the committed records of round r that peers sent. There is
// no majority without a ledger to weigh by.
func majorityOf(heads []peerHead, led *incentives.State, r uint64) (*incentives.Record, []peer.ID, error) {
	best, answered := mostPower(heads, led)
	if best == nil || 2*best.weight <= led.TotalPower() {
		return nil, nil, fmt.Errorf("round %d: %w (%d of %d answered)", r, errNoMajority, answered, totalPower(led))
	}
	return best.rec, best.signers, nil
}

// pluralityOf is the record of round r of most voting power by led among the committed
// records peers sent, when together they carry more than half of it but none alone does
// (a split no list vote can mend any more: each side's rounds left the window). Ties go
// to the record whose signers include the least peer ID: nodes that heard the same
// answers pick the same lineage, and the same one at every round of the split (the
// record's own bytes, which differ from round to round, once sent both halves of a test
// onto each other's lineage at once). errNoMajority when the answers carry half of the
// power or less.
func pluralityOf(heads []peerHead, led *incentives.State, r uint64) (*incentives.Record, []peer.ID, error) {
	best, answered := mostPower(heads, led)
	if best == nil || 2*answered <= led.TotalPower() {
		return nil, nil, fmt.Errorf("round %d: %w (%d of %d answered)", r, errNoMajority, answered, totalPower(led))
	}
	return best.rec, best.signers, nil
}

// pluralityWith is pluralityOf over heads and the node's own committed record of round r
// (self): a node that leaves itself out sees its own side one member short, and moves
// onto any other side of as much power as the rest of its own (a 40% signer took two
// nodes of 30% each that way). The power that did not answer is counted on its own side
// too: it leaves only for a record of more power than its own side and all of the silent
// power together, or, when every voter answered, for one that wins on power or on the
// tie. Otherwise the pick is its own record (it stays): a majority with one member slow to
// answer must not look like a minority.
func pluralityWith(heads []peerHead, self peerHead, led *incentives.State, r uint64) (*incentives.Record, []peer.ID, error) {
	all := append(slices.DeleteFunc(slices.Clone(heads), func(h peerHead) bool { return h.from == self.from }), self)
	best, answered := mostPower(all, led)
	if best == nil || 2*answered <= led.TotalPower() {
		return nil, nil, fmt.Errorf("round %d: %w (%d of %d answered)", r, errNoMajority, answered, totalPower(led))
	}
	own := self.rec.Marshal()
	if bytes.Equal(best.rec.Marshal(), own) {
		return best.rec, best.signers, nil
	}
	var side uint64
	for _, h := range all {
		if bytes.Equal(h.rec.Marshal(), own) {
			side += led.Power(h.from.String())
		}
	}
	if silent := led.TotalPower() - answered; silent == 0 || best.weight > side+silent {
		return best.rec, best.signers, nil
	}
	return self.rec, nil, nil
}

// powerGroup is the peers that sent one committed record, and their voting power.
type powerGroup struct {
	rec     *incentives.Record
	signers []peer.ID
	weight  uint64
}

// mostPower groups heads by record (each peer once, peers without power left out) and
// returns the group of most voting power by led, ties to the group with the least peer
// ID, and the power of every peer that answered; nil with no ledger or no answer of a
// peer with power.
func mostPower(heads []peerHead, led *incentives.State) (*powerGroup, uint64) {
	if led == nil {
		return nil, 0
	}
	groups := map[string]*powerGroup{}
	seen := map[peer.ID]bool{}
	var answered uint64
	for _, h := range heads {
		if seen[h.from] {
			continue
		}
		seen[h.from] = true
		w := led.Power(h.from.String())
		if w == 0 { // a key of no stake neither weighs nor breaks a tie nor is followed
			continue
		}
		k := string(h.rec.Marshal())
		g := groups[k]
		if g == nil {
			g = &powerGroup{rec: h.rec}
			groups[k] = g
		}
		g.signers = append(g.signers, h.from)
		g.weight += w
		answered += w
	}
	var best *powerGroup
	for _, g := range groups {
		if best == nil || g.weight > best.weight || g.weight == best.weight && slices.Min(g.signers) < slices.Min(best.signers) {
			best = g
		}
	}
	return best, answered
}

// totalPower is led's total voting power, 0 without a ledger.
func totalPower(led *incentives.State) uint64 {
	if led == nil {
		return 0
	}
	return led.TotalPower()
}

// followOf is the record of round r that the peers of follow committed, when all of them
// that answered committed the same one; errNoMajority otherwise.
func followOf(heads []peerHead, follow []peer.ID, r uint64) (*incentives.Record, []peer.ID, error) {
	var rec *incentives.Record
	var signers []peer.ID
	for _, h := range heads {
		if !slices.Contains(follow, h.from) || slices.Contains(signers, h.from) {
			continue
		}
		if rec != nil && !bytes.Equal(rec.Marshal(), h.rec.Marshal()) {
			return nil, nil, fmt.Errorf("round %d: the peers followed committed different records: %w", r, errNoMajority)
		}
		rec = h.rec
		signers = append(signers, h.from)
	}
	if rec == nil {
		return nil, nil, fmt.Errorf("round %d: none of the peers followed answered: %w", r, errNoMajority)
	}
	return rec, signers, nil
}

// backed checks that signers carry more than half of led's voting power.
func backed(led *incentives.State, signers []peer.ID) error {
	var w uint64
	for _, p := range signers {
		w += led.Power(p.String())
	}
	if 2*w <= led.TotalPower() {
		return fmt.Errorf("its record's signers carry %d of %d voting power: %w", w, led.TotalPower(), errNoMajority)
	}
	return nil
}

// run joins from the checkpoint of round c (genesis if 0), then every round after it that
// a majority committed (forward).
func (j *joiner) run(ctx context.Context, c uint64) (*joined, error) {
	out := &joined{}
	if c > 0 {
		ck, err := j.checkpoint(ctx, c)
		if err != nil {
			return nil, err
		}
		out.ckpt, out.state, out.ledger = ck, ck.Model, ck.Ledger
	}
	if out.ckpt == nil { // θ_0, not the loop's start: a restart or a resync moves that
		var err error
		if out.state, err = j.rep.p.Initial(); err != nil {
			return nil, err
		}
		if out.ledger, err = j.rep.p.GenesisState(); err != nil {
			return nil, err
		}
	}
	return out, j.forward(ctx, out)
}

// forward closes again every round from out's state on whose committed record a majority
// of the voting power signed, adding them to out, until the first round without one.
func (j *joiner) forward(ctx context.Context, out *joined) error {
	for r := out.state.Round; ; r++ {
		rec, signers, err := j.majority(ctx, r, out.ledger)
		if errors.Is(err, errNoMajority) {
			return nil
		}
		if err := j.replay(ctx, out, rec, signers); err != nil {
			return err
		}
	}
}

// replay closes rec's round again from out's state with the shards fetched for it. A
// record that does not follow the state reached is refused before anything is fetched
// for it.
func (j *joiner) replay(ctx context.Context, out *joined, rec *incentives.Record, signers []peer.ID) error {
	if rec.Round != out.ledger.Round || !bytes.Equal(rec.PrevRoot, out.ledger.Head) {
		return &ReplayError{Round: rec.Round, Err: fmt.Errorf("the record of round %d follows %x, the state reached is round %d at %x",
			rec.Round, rec.PrevRoot[:min(8, len(rec.PrevRoot))], out.ledger.Round, out.ledger.Head[:min(8, len(out.ledger.Head))])}
	}
	shards, err := j.shards(ctx, rec, signers)
	if err != nil {
		return err
	}
	next, led, events, err := j.rep.replayRound(memRound{rec: rec, shards: shards}, out.state, out.ledger, rec)
	if err != nil {
		return &ReplayError{Round: rec.Round, Err: err}
	}
	out.rounds = append(out.rounds, store.Round{Record: rec, State: led, Events: events, Shards: shards})
	out.state, out.ledger = next, led
	return nil
}

// checkpoint syncs the checkpoint of round c: its root is the NewRoot of the record of
// round c-1 that most peers committed, and those peers must carry a majority of the
// voting power of the checkpoint's ledger.
func (j *joiner) checkpoint(ctx context.Context, c uint64) (*checkpoint.Checkpoint, error) {
	rec, signers, err := majorityOf(j.committed(ctx, c-1), j.trust, c-1) // never a followed lineage's
	if err != nil {
		return nil, err
	}
	if len(rec.NewRoot) != 32 {
		return nil, fmt.Errorf("round %d: a record with a root of %d bytes", c-1, len(rec.NewRoot))
	}
	ck, err := j.n.syncCheckpoint(ctx, ckptWant{Root: [32]byte(rec.NewRoot), Peers: signers})
	if err != nil {
		return nil, err
	}
	size, _ := ck.WriteTo(io.Discard) // its encoding's size, with no copy of it
	j.bytes.Add(size)
	if ck.Round != c {
		return nil, fmt.Errorf("the checkpoint of root %x is of round %d, not %d", rec.NewRoot[:8], ck.Round, c)
	}
	if err := backed(ck.Ledger, signers); err != nil {
		return nil, fmt.Errorf("the checkpoint of round %d: %w", c, err)
	}
	return ck, nil
}

// memRound is one round's record and the shards fetched for it, as a replay reads them.
type memRound struct {
	rec    *incentives.Record
	shards []store.Shard
}

func (m memRound) Record(r uint64) (*incentives.Record, error) {
	if r != m.rec.Round {
		return nil, nil
	}
	return m.rec, nil
}

func (m memRound) Shards(r uint64) ([]store.Shard, error) {
	if r != m.rec.Round {
		return nil, nil
	}
	return m.shards, nil
}

var _ roundSource = memRound{}

// wantRounds asks the peers of the records topic and the connected voters of the genesis
// ledger j.trust (askOrder) for their heads, dialing more voters between asks
// (connectVoters), and returns the highest round that peers
// carrying more than half of its voting power reach (headOfPower): identities without
// genesis stake, however many and however their IDs sort, move nothing. It returns false
// (start at genesis) when no such majority has a head once wait has passed, or at once
// when no staked peer has one and enough says the peers asked are enough to know it: heads of a
// minority (nodes that started early and closed rounds alone) are no canonical history,
// and a majority starting at genesis outvotes them, so they repair onto its rounds. enough
// gets the peers asked and those that answered that they closed no round.
func (j *joiner) wantRounds(ctx context.Context, enough func(asked, none []peer.ID) bool, wait time.Duration) (uint64, bool) {
	until := time.Now().Add(wait)
	for ctx.Err() == nil {
		j.peers = j.askable(j.trust)
		j.notHeld = nil
		heads := j.committed(ctx, headRound)
		if h, ok := headOfPower(refsOf(heads), j.trust); ok {
			return h, true
		}
		heads = slices.DeleteFunc(heads, func(h peerHead) bool { return j.trust.Power(h.from.String()) == 0 })
		if len(heads) == 0 && enough(j.peers, slices.Collect(maps.Keys(j.notHeld))) {
			return 0, false
		}
		if time.Now().After(until) {
			if len(heads) > 0 {
				j.n.log.Warn("joining: the peers that report a head carry no majority of the genesis stake: starting at genesis",
					"heads", len(heads), "peers_asked", len(j.peers))
			}
			return 0, false
		}
		// The peers asked may carry too little of the stake to decide either way: a node
		// of a large swarm is not connected to every other. Dial the genesis voters the
		// peer store or the rendezvous knows (as a catch-up does), and ask them next.
		j.connectVoters(ctx, j.trust)
		select {
		case <-ctx.Done():
		case <-time.After(joinPoll):
		}
	}
	return 0, false
}
