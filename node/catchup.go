package node

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/p2p"
)

// Bounds of a catch-up.
const (
	// catchUpWait is how long a restarted node looks for peers carrying a majority of the
	// voting power before its loop starts from its own committed state (a catch-up while
	// running looks as long: the loop is stopped meanwhile).
	catchUpWait = 30 * time.Second
	// voterLookup bounds one rendezvous lookup and the dials of the voters it finds.
	voterLookup = 5 * time.Second
)

// catchUp brings a restarted node to its peers' head before its loop starts, when they
// are past it or it is off their lineage (catchUpFrom, from where it resumed). Otherwise it
// starts where it resumed, as it does when the catch-up fails (logged): it still starts
// from its own committed state. The resume point is let go afterwards: its replayed
// rounds' states and its local state (about 100 MB on the default task) are the core's
// and the trainer's now, or replaced.
func (n *Node) catchUp(ctx context.Context) error {
	_, err := n.catchUpFrom(ctx, n.train.resumed, catchUpWait)
	n.train.resumed = resumePoint{}
	return err
}

// caughtUp is what a catch-up did: whether the core was reset, and how many rounds the
// node had closed on a lineage of its own that its peers' replaced (a rewind: 0 when none).
type caughtUp struct {
	moved    bool
	replaced uint64
}

// catchUpFrom brings the node from rp to its peers' head: the head is the highest round
// that peers carrying more than half of the voting power of rp's ledger reach
// (headOfPower; it waits for such peers at most wait, then goes on from rp, logged). A
// node at that head goes on only when the record a majority committed for its head is not
// its own (offLineage). The rounds of the repair window rp holds whose committed record a
// majority of the voting power signed differently are closed again from the snapshot
// before the first of them (a repair, Store.Reorg), and every round after its head that a
// majority committed is closed again and committed (as a late joiner does), with the
// shards fetched by CID. When that cannot be done (the shards are gone, its head is before
// what the peers keep, its own lineage parted from theirs before the window), it syncs the
// checkpoint a majority committed and replays from there (jump: its rounds are dropped,
// and replaced when it was off their lineage). Its core then starts at the head reached,
// seeded with the last rounds, its votes and its local state kept, its local work from
// the round its peers work on (never before rp.first). An error only when the store does
// not take what was checked.
func (n *Node) catchUpFrom(ctx context.Context, rp resumePoint, wait time.Duration) (caughtUp, error) {
	began, j := time.Now(), n.newJoiner()
	j.trust = rp.ledger
	h, ok := j.wantHead(ctx, rp.ledger, wait)
	if !ok {
		return caughtUp{}, nil
	}
	if h+1 <= rp.state.Round {
		if !j.offLineage(ctx, rp, h) {
			n.log.Info("catching up: the peers are not past this node, nor on another lineage", "round", rp.state.Round, "peers_head", h, "peers", len(j.peers))
			return caughtUp{}, nil
		}
		if h, ok = j.waitHead(ctx, rp, wait); !ok {
			n.log.Warn("catching up: off the peers' lineage, and they did not reach this node's head: starting from the committed state", "round", rp.state.Round, "waited", wait)
			return caughtUp{}, nil
		}
	}
	out, from, err := j.rebase(ctx, rp)
	if err == nil {
		err = j.forward(ctx, out)
	}
	var replaced uint64
	if err == nil && out.state.Round > h {
		err = n.commitCaughtUp(out, from, rp.state.Round)
	} else if replaced, err = n.jump(ctx, rp, h, j); err == nil {
		out, from = j.got, 0
		if j.got.ckpt != nil {
			from = j.got.ckpt.Round
		}
	}
	if err != nil {
		n.log.Warn("catching up with the peers failed: starting from the committed state", "round", rp.state.Round, "peers_head", h, "err", err)
		return caughtUp{}, nil
	}
	if err := keptVotes(n.ledger.st, j.rep.snaps); err != nil {
		return caughtUp{}, err
	}
	first := max(rp.first, out.state.Round+uint64(n.train.params.round.Delay))
	next := resumePoint{state: out.state, ledger: out.ledger, first: first, local: rp.local, snaps: j.rep.snaps}
	if err := n.train.reset(next, n.log); err != nil {
		return caughtUp{}, fmt.Errorf("catching up: %w", err)
	}
	var ck uint64
	if j.got != nil && j.got.ckpt != nil {
		ck = j.got.ckpt.Round
	}
	n.train.prog.caughtUp(out.rounds)
	n.log.Info(fmt.Sprintf("caught up from round %d to round %d from round %d, fetched %d bytes in %.1f seconds",
		rp.state.Round, out.state.Round, from, j.bytes.Load(), time.Since(began).Seconds()),
		"from", rp.state.Round, "to", out.state.Round, "closed_again_from", from, "checkpoint", ck, "replaced", replaced,
		"bytes", j.bytes.Load(), "first_local_round", first)
	return caughtUp{moved: true, replaced: replaced}, nil
}

// offLineage reports whether the record that peers carrying a majority of the voting
// power (by rp's ledger) committed for round min(h, rp's head) is not the node's own: it
// closed that round from another state or with another list. h is the peers' head, the
// node's head the last round it closed. False when no such majority answers.
func (j *joiner) offLineage(ctx context.Context, rp resumePoint, h uint64) bool {
	if rp.state.Round == 0 {
		return false
	}
	r := min(h, rp.state.Round-1)
	rec, err := j.lineageOf(ctx, j.committed(ctx, r), r, rp.ledger)
	if err != nil {
		return false
	}
	own, err := j.n.ledger.st.Record(r)
	return err == nil && own != nil && !bytes.Equal(own.Marshal(), rec.Marshal())
}

// lineageOf is the record of round r that the node should hold, from heads, the peers'
// committed records of r: the one peers carrying a majority of the voting power by led
// committed. When none did, the nodes are split: the node counts its own record with
// theirs, and when together they carry a majority, the record of most power stands
// (pluralityOf; ties to the signers with the least peer ID), so that every node that
// heard the same answers picks the same lineage, and one whose own record is that one
// stays. It moves the node only when the split reaches back past its repair window (at
// round r - repair_depth the picked side's record is not its own either): inside the
// window the list vote decides. The picked record's signers are then the lineage the catch-up
// follows (j.follow) through the rounds no majority committed. errNoMajority otherwise.
func (j *joiner) lineageOf(ctx context.Context, heads []peerHead, r uint64, led *incentives.State) (*incentives.Record, error) {
	j.follow = nil
	rec, _, err := majorityOf(heads, led, r)
	if !errors.Is(err, errNoMajority) {
		return rec, err
	}
	own, oerr := j.n.ledger.st.Record(r)
	if oerr != nil || own == nil {
		return nil, err
	}
	pick, signers, err := pluralityWith(heads, peerHead{from: j.n.host.ID(), rec: own}, led, r)
	if err != nil || bytes.Equal(pick.Marshal(), own.Marshal()) {
		return pick, err
	}
	d := repairDepth(j.n.opts.Spec)
	if r < d {
		return nil, fmt.Errorf("round %d: split inside the repair window: %w", r, errNoMajority)
	}
	own0, err := j.n.ledger.st.Record(r - d)
	if err != nil || own0 == nil {
		return nil, fmt.Errorf("round %d: no record of its own of round %d to tell where the split began: %w", r, r-d, errNoMajority)
	}
	if fol0, _, err := followOf(j.committed(ctx, r-d), signers, r-d); err != nil || bytes.Equal(fol0.Marshal(), own0.Marshal()) {
		return nil, fmt.Errorf("round %d: the side picked held its record of round %d, inside the repair window, or did not say: %w", r, r-d, errNoMajority)
	}
	j.follow = signers
	return pick, nil
}

// splitCheckpoint is the checkpoint a rewind onto a followed lineage starts from: from c
// back, the last of at most checkpoints_kept (older ones are pruned everywhere) whose
// round before a majority of the voting power committed, and the followed peers with
// them, so that the followed lineage goes on from it; genesis when the walk reaches it.
func (j *joiner) splitCheckpoint(ctx context.Context, c uint64) (uint64, error) {
	a := j.n.opts.Spec.Agreement
	every := uint64(a.CheckpointEvery)
	for i := 0; c > 0 && i < a.CheckpointsKept; i++ {
		heads := j.committed(ctx, c-1)
		if maj, _, err := majorityOf(heads, j.trust, c-1); err == nil {
			if fol, _, err := followOf(heads, j.follow, c-1); err == nil && bytes.Equal(fol.Marshal(), maj.Marshal()) {
				return c, nil
			}
		}
		c -= min(c, every)
	}
	if c > 0 {
		return 0, fmt.Errorf("none of the last %d checkpoints before round %d is of a round the split had not reached", a.CheckpointsKept, c+uint64(a.CheckpointsKept)*every)
	}
	return 0, nil
}

// waitHead waits at most wait for peers carrying a majority of the voting power (by rp's
// ledger) to reach rp's head, the last round the node closed (a node off their lineage a
// round or two ahead of them: replacing its rounds with theirs must not take it back to a
// round it closed, voted on and contributed to), and returns their head as they answer
// now. A node at their head asks too: the catch-up must go by their current head, which
// has usually moved on since the first ask (without it the rewind test's node did not
// resync in a minute).
func (j *joiner) waitHead(ctx context.Context, rp resumePoint, wait time.Duration) (uint64, bool) {
	until := time.Now().Add(wait)
	for ctx.Err() == nil && time.Now().Before(until) {
		select {
		case <-ctx.Done():
		case <-time.After(joinPoll):
		}
		j.peers = j.askable(rp.ledger)
		if h, ok := headOfPower(j.headRefs(ctx, headRound, nil), rp.ledger); ok && h+1 >= rp.state.Round {
			return h, true
		}
	}
	return 0, false
}

// wantHead asks peers for their heads until those that answered carry more than half of
// led's voting power (headOfPower), or wait has passed (at once when the other voters
// together carry no such majority): the peers of the records topic,
// and, while they are not enough, the voters of led found through the rendezvous or the
// peer store, dialed (a restarted node's mesh takes a while to form; asking them directly
// also connects it). It logs once when it has to look for voters.
func (j *joiner) wantHead(ctx context.Context, led *incentives.State, wait time.Duration) (uint64, bool) {
	if total := led.TotalPower(); 2*(total-led.Power(j.n.host.ID().String())) <= total {
		j.n.log.Info("catching up: the other voters carry no majority of the voting power: starting from the committed state", "round", led.Round)
		return 0, false
	}
	until, logged := time.Now().Add(wait), false
	for ctx.Err() == nil {
		j.peers = j.askable(led)
		if h, ok := headOfPower(j.headRefs(ctx, headRound, nil), led); ok {
			return h, true
		}
		if time.Now().After(until) {
			j.n.log.Warn("catching up: the peers that answered carry no majority of the voting power: starting from the committed state",
				"round", led.Round, "peers_asked", len(j.peers), "waited", wait)
			return 0, false
		}
		if !logged {
			j.n.log.Info("catching up: waiting for peers carrying a majority of the voting power", "peers", len(j.peers), "at_most", wait)
			logged = true
		}
		j.connectVoters(ctx, led)
		select {
		case <-ctx.Done():
		case <-time.After(joinPoll):
		}
	}
	return 0, false
}

// askable are the peers a catch-up asks: those of the records topic and the connected
// voters of led (askOrder).
func (j *joiner) askable(led *incentives.State) []peer.ID {
	return askOrder(j.n.host.ID(), j.n.host.TopicPeers(p2p.KindRecords), j.n.host.ConnectedPeers(), led)
}

// askOrder orders the peers of the records topic and the connected voters of led (never
// self) by voting power, most first, and keeps joinPeers of them, or more while the voters
// kept carry at most three quarters of led's voting power: a head or a record is taken
// only when the peers that answered carry more than half of it, so with many voters of
// equal power a fixed number of peers would never be enough, and the margin lets some
// not answer. Peers without power beyond the first joinPeers add nothing and are not
// kept; at most joinMaxPeers are.
func askOrder(self peer.ID, topic, connected []peer.ID, led *incentives.State) []peer.ID {
	var out []peer.ID
	for _, p := range append(slices.Clone(topic), connected...) {
		if p != self && !slices.Contains(out, p) && (led.Power(p.String()) > 0 || slices.Contains(topic, p)) {
			out = append(out, p)
		}
	}
	slices.SortStableFunc(out, func(a, b peer.ID) int { return cmp.Compare(led.Power(b.String()), led.Power(a.String())) })
	var w uint64
	n := 0
	for n < len(out) && n < joinMaxPeers {
		pw := led.Power(out[n].String())
		if n >= joinPeers && (pw == 0 || 4*w > 3*led.TotalPower()) {
			break
		}
		w += pw
		n++
	}
	return out[:n]
}

// connectVoters dials voters of led this node is not connected to, with the addresses
// the peer store or a rendezvous lookup gives, for at most voterLookup: those of most
// power first, until the voters connected would carry more than three quarters of the
// voting power (askOrder's margin), and none when they already do. Dialing every voter
// would cost a swarm starting at once N² dials, and each joiner a lookup every ask.
func (j *joiner) connectVoters(ctx context.Context, led *incentives.State) {
	h := j.n.host
	connected := h.ConnectedPeers()
	var w uint64
	for _, p := range connected {
		w = addPower(w, led.Power(p.String()))
	}
	enough := func() bool { return w > led.TotalPower()/4*3+led.TotalPower()%4*3/4 }
	if enough() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, voterLookup)
	defer cancel()
	want := func(ai peer.AddrInfo) bool {
		return ai.ID != h.ID() && len(ai.Addrs) > 0 && led.Power(ai.ID.String()) > 0 && !slices.Contains(connected, ai.ID)
	}
	var cands []peer.AddrInfo
	for _, ai := range h.KnownPeers() {
		if want(ai) {
			cands = append(cands, ai)
		}
	}
	if found, err := h.LookupRendezvous(ctx); err == nil {
		for _, ai := range found {
			if want(ai) && !slices.ContainsFunc(cands, func(c peer.AddrInfo) bool { return c.ID == ai.ID }) {
				cands = append(cands, ai)
			}
		}
	}
	slices.SortStableFunc(cands, func(a, b peer.AddrInfo) int {
		return cmp.Or(cmp.Compare(led.Power(b.ID.String()), led.Power(a.ID.String())), cmp.Compare(a.ID, b.ID))
	})
	var dial []peer.AddrInfo
	for _, ai := range cands {
		if enough() || len(dial) == joinMaxPeers {
			break
		}
		dial = append(dial, ai)
		w = addPower(w, led.Power(ai.ID.String()))
	}
	var wg sync.WaitGroup
	for _, ai := range dial {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := h.Connect(ctx, ai); err != nil {
				j.n.log.Debug("catching up: dialing a voter", "peer", ai.ID.ShortString(), "err", err)
			}
		}()
	}
	wg.Wait()
}

// addPower adds voting power, saturating.
func addPower(a, b uint64) uint64 {
	if a+b < a {
		return ^uint64(0)
	}
	return a + b
}

// jump syncs the checkpoint before the peers' head h (checkpointOf; genesis without one)
// and the rounds after it that a majority committed (joiner.run), and stores them in
// place of the node's rounds in one transaction (Store.JumpTo); j then holds what it
// replayed. Past rp's head it is a node too far behind to repair. At or before it, it is
// a rewind: taken only when the node is off its peers' lineage (offLineage; otherwise the
// catch-up failed for another reason and its own rounds stand) and when the rounds
// replayed reach its head, so that it never closes, votes on or signs shards for a round
// again (the store refuses it too). It returns how many of the node's rounds the rewind
// replaced.
func (n *Node) jump(ctx context.Context, rp resumePoint, h uint64, j *joiner) (uint64, error) {
	j.rep.snaps = nil
	c := j.checkpointOf(h)
	rewind := c <= rp.state.Round
	if rewind && !j.offLineage(ctx, rp, h) {
		return 0, fmt.Errorf("no checkpoint past round %d to sync, and the node's head is on its peers' lineage", rp.state.Round)
	}
	switch {
	case !rewind:
		j.follow = nil // a lineage of a majority past its head: nothing to follow
	case j.follow != nil:
		var err error
		if c, err = j.splitCheckpoint(ctx, c); err != nil {
			return 0, err
		}
	}
	got, err := j.run(ctx, c)
	// A replay stops at the first round without a majority's record among the answers,
	// which may be peers slow to answer or out of fetch budget: a rewind asks again, for
	// at most catchUpWait, until it reaches the node's head.
	for until := time.Now().Add(catchUpWait); err == nil && got.state.Round < rp.state.Round && time.Now().Before(until); {
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(joinPoll):
		}
		err = j.forward(ctx, got)
	}
	if err != nil {
		return 0, err
	}
	if got.state.Round < rp.state.Round {
		return 0, fmt.Errorf("the rounds a majority committed from round %d reach round %d, before the node's head %d", c, got.state.Round, rp.state.Round)
	}
	var replaced uint64
	if rewind {
		replaced = rp.state.Round - c
		n.log.Warn(fmt.Sprintf("off the peers' lineage since before round %d: its %d rounds from round %d on are replaced by theirs", rp.state.Round, replaced, c),
			"checkpoint", c, "head", rp.state.Round, "peers_head", h)
	}
	if err := n.storeJoined(got, true); err != nil {
		return 0, fmt.Errorf("catching up: %w", err)
	}
	j.got = got
	return replaced, nil
}

// checkpointOf is the round of the checkpoint a join at the peers' head h starts from:
// the last multiple of checkpoint_every at or before h+1 (0: genesis, none).
func (j *joiner) checkpointOf(h uint64) uint64 {
	if every := uint64(j.n.opts.Spec.Agreement.CheckpointEvery); every > 0 {
		return (h + 1) / every * every
	}
	return 0
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
