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
	"github.com/lowband/lowband/node/core"
	"github.com/lowband/lowband/node/store"
)

// Bounds of the head watch of a running node.
const (
	// probeMin and probeEvery bound the time between two looks at the peers' heads: the
	// spec's deadline_min (a round with every staked contribution closes sooner, one
	// waiting for a missing peer about that late).
	probeMin   = 2 * time.Second
	probeEvery = 30 * time.Second
	// probeMax bounds the back-off after catch-ups that did not move the node.
	probeMax = 2 * time.Minute
)

// Reasons of a resync.
const (
	resyncBehind   = "behind"   // the peers' head is past this node's by more than the repair window
	resyncDiverged = "diverged" // the record a majority committed for this node's head is not its own, for deadline_max
	resyncStale    = "stale"    // a repair waited until its round left the window
)

// resyncCause ends the round loop's context when the head watch finds the node off its
// peers' lineage.
type resyncCause struct {
	why         string
	head, peers uint64 // this node's last closed round, the peers'
	// settled, for a divergence: a majority committed another record than this node's of
	// a round before its repair window, so no repair in flight can end it.
	settled bool
}

func (c *resyncCause) Error() string {
	return fmt.Sprintf("%s: head %d, the peers' %d", c.why, c.head, c.peers)
}

// ResyncStatus is the last time a running node caught up with its peers (resync), for
// GET /status.
type ResyncStatus struct {
	Reason    string `json:"reason"`     // behind, diverged or stale
	From      uint64 `json:"from"`       // the first open round before it
	To        uint64 `json:"to"`         // the first open round after it (From: it did not move)
	PeersHead uint64 `json:"peers_head"` // the last round the peers closed, as the watch saw it
	// Replaced counts the rounds this node had closed on a lineage of its own that its
	// peers' replaced (it parted from them before its repair window: a rewind to their
	// checkpoint); 0 when none.
	Replaced uint64  `json:"replaced"`
	Seconds  float64 `json:"seconds"` // with the loop stopped
}

// runTraining runs the round loop until ctx ends or the loop fails. Meanwhile the head
// watch compares the node with its peers (probeHead); when it finds the node behind them
// by more than the repair window, or on a lineage their majority does not hold, it stops
// the loop, and the node resumes from its store and catches up (resync) before the loop
// runs again. A resync that does not move the node doubles the time to the next look.
func (n *Node) runTraining(ctx context.Context) error {
	d := n.train.params.Deadline
	every := min(max(probeMin, d.Min), probeEvery)
	// A repair in flight gets deadline_max before a divergence counts: the first look that
	// finds it may come at once, so it takes ceil(deadline_max / every) more (at least two
	// looks in all).
	strikes := int((d.Max+every-1)/every) + 1
	// While the looks find the node with its peers, they come ever further apart, up to
	// deadline_max (at most probeEvery): a look asks about half of the voters, and with
	// the bench's deadline_min of 10 s looks every 10 s were 2 KB of each node's 120 KB a
	// round in a swarm of 16. A look that finds a divergence brings them back to every.
	calm := min(probeEvery, max(every, d.Max))
	wait := every
	for {
		lctx, stop := context.WithCancelCause(ctx)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); watchHead(lctx, stop, wait, max(wait, calm), strikes, n.probeHead) }()
		initial := n.train.initial
		// The loop evaluates θ once and its core holds its own copy: the values go with it.
		n.train.initial.Params = nil
		err := n.train.loop.run(lctx, initial)
		stop(nil)
		wg.Wait()
		var rc *resyncCause
		if err != nil || ctx.Err() != nil || !errors.As(context.Cause(lctx), &rc) {
			return err
		}
		moved, err := n.resync(ctx, rc)
		if err != nil {
			return err
		}
		if moved {
			wait = every
		} else {
			wait = min(2*wait, probeMax)
		}
	}
}

// watchHead looks at the peers' heads (probe) until ctx ends, and stops the loop with the
// cause when the probe finds the node behind or stale (at once) or diverged (strikes
// looks in a row, quick apart: a repair in flight gets that long; at once when the
// divergence is settled before the repair window, which no repair can end). The first
// look comes quick after the start; after each look (nextLook) that found the node with
// its peers the wait doubles, up to calm.
func watchHead(ctx context.Context, stop context.CancelCauseFunc, quick, calm time.Duration, strikes int, probe func(context.Context) *resyncCause) {
	diverged, wait := 0, quick
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		c := probe(ctx)
		switch {
		case c == nil:
			diverged = 0
		case c.why == resyncDiverged && !c.settled && diverged+1 < strikes:
			diverged++
		default:
			stop(c)
			return
		}
		wait = nextLook(wait, quick, calm, c == nil)
	}
}

// nextLook is the wait after a look that waited wait: twice that, up to calm, after one
// that found the node with its peers (agreed); quick after one that did not.
func nextLook(wait, quick, calm time.Duration, agreed bool) time.Duration {
	if !agreed {
		return quick
	}
	return max(min(2*wait, calm), quick)
}

// probeHead asks the peers for their heads (the digests of their committed records of
// their last closed round, signed: headRefs) and compares the node with the head that
// peers carrying more than half of the voting power reach (headOfPower, with the ledger of
// the node's head): nil when no such majority answered, or when it is not behind them by
// more than its repair window and the record that majority committed for the node's head
// (theirs, when they are behind it) is the node's own. Only when the peers naming the
// node's own record carry no more than half of the power are the records themselves asked
// for: when no record has a majority and the split reaches back past the window,
// the one of most power among the answers and the node's own (lineageOf) stands for it. A
// peer's claim alone moves nothing.
func (n *Node) probeHead(ctx context.Context) *resyncCause {
	led := n.ledger.state.Load()
	if led.Round == 0 { // a node at genesis joins before its loop (joinRun)
		return nil
	}
	head := led.Round - 1
	j := n.newJoiner()
	j.peers = j.askable(led)
	var ownHead *[32]byte
	if own, err := n.ledger.st.Record(head); err == nil && own != nil {
		d := incentives.RecordDigest(own.Marshal())
		ownHead = &d
	}
	heads := j.lookHeads(ctx, led, head, ownHead)
	n.offerRecords(ctx, heads)
	h, ok := headOfPower(heads, led)
	switch {
	case !ok:
		return nil
	case h > head+repairDepth(n.opts.Spec):
		return &resyncCause{why: resyncBehind, head: head, peers: h}
	case h >= head && n.train.loop.Agreement().Stale:
		return &resyncCause{why: resyncStale, head: head, peers: h}
	}
	r := min(h, head) // a node off their lineage may close rounds at their pace, a round ahead
	own, err := n.ledger.st.Record(r)
	if err != nil || own == nil {
		return nil
	}
	digest := incentives.RecordDigest(own.Marshal())
	if sameAsMost(refsAt(heads, r), digest, led) { // more answers would only add to it
		return nil
	}
	at := j.headRefs(ctx, r, heads)
	n.offerRecords(ctx, at)
	if sameAsMost(at, digest, led) {
		return nil
	}
	rec, err := j.lineageOf(ctx, j.committed(ctx, r), r, led) // with no majority, the record of most power
	if err != nil || bytes.Equal(own.Marshal(), rec.Marshal()) {
		return nil
	}
	return &resyncCause{why: resyncDiverged, head: head, peers: h, settled: j.settledApart(ctx, r, n.train.loop.View().RepairFrom, led)}
}

// settledApart reports whether peers carrying more than half of led's voting power
// committed a record of a round before the repair window, this node's (repairFrom, which a
// repair in flight widens) and theirs at r (r − lag or earlier, lag being how far back a
// peer at r whose repair waits may still close a round again), other than this
// node's own: its lineage parted from theirs where no repair reaches (a node that started
// alone, or was cut off for longer than the window). One more ask of the voters, made only
// once a look found the node diverged.
func (j *joiner) settledApart(ctx context.Context, r, repairFrom uint64, led *incentives.State) bool {
	u, ok := settledRound(r, repairFrom, repairDepth(j.n.opts.Spec))
	if !ok {
		return false
	}
	own, err := j.n.ledger.st.Record(u)
	if err != nil || own == nil {
		return false
	}
	theirs, _, err := majorityOf(j.committed(ctx, u), led, u)
	return err == nil && !bytes.Equal(theirs.Marshal(), own.Marshal())
}

// settledRound is the latest round that neither a peer at head r nor this node, whose
// window starts at repairFrom, may still close again, both of repair depth depth; false
// when there is none. A peer at r whose repair waits keeps open the rounds from
// r + 1 − core.RepairLag(depth) on (core.repairFromAt, once r + 1 is its next to close), so
// round r − lag is the latest out of its reach; this node's is repairFrom − 1.
func settledRound(r, repairFrom, depth uint64) (uint64, bool) {
	lag := core.RepairLag(depth)
	if r < lag || repairFrom == 0 {
		return 0, false
	}
	return min(r-lag, repairFrom-1), true
}

// lookHeads asks the voters among j.peers (led's power first) for their heads. When the
// node knows its own record of its head round (own, its digest), it asks in two steps:
// first the fewest of them that could carry more than half of led's voting power, then
// the others only if those answers do not name the node's own record of that round with
// such a majority. When they do, the look is decided whatever the others would answer:
// the highest round a majority reaches is head (a majority is at it, so no majority is
// past it) and that majority committed the node's record (sameAsMost only grows with more
// answers). In a swarm that agrees, a look then costs about half of the voters a request
// and a 106-byte answer, not all of them.
func (j *joiner) lookHeads(ctx context.Context, led *incentives.State, head uint64, own *[32]byte) []headRef {
	if own == nil {
		return j.headRefs(ctx, headRound, nil)
	}
	all := j.peers
	defer func() { j.peers = all }()
	voters := j.voters()
	var w uint64
	for i, p := range voters {
		if w += led.Power(p.String()); 2*w > led.TotalPower() {
			voters = voters[:i+1]
			break
		}
	}
	j.peers = voters
	heads := j.headRefs(ctx, headRound, nil)
	if sameAsMost(refsAt(heads, head), *own, led) {
		return heads
	}
	j.peers = slices.DeleteFunc(slices.Clone(all), func(p peer.ID) bool { return slices.Contains(voters, p) })
	return j.headRefs(ctx, headRound, heads)
}

// refsAt is the refs of round r.
func refsAt(refs []headRef, r uint64) []headRef {
	return slices.DeleteFunc(slices.Clone(refs), func(h headRef) bool { return h.round != r })
}

// sameAsMost reports whether the peers of refs that committed the record of digest carry
// more than half of led's voting power (each peer once): then that record is the one a
// majority committed.
func sameAsMost(refs []headRef, digest [32]byte, led *incentives.State) bool {
	var w uint64
	seen := map[peer.ID]bool{}
	for _, h := range refs {
		if h.digest == digest && !seen[h.from] {
			seen[h.from] = true
			w += led.Power(h.from.String())
		}
	}
	return 2*w > led.TotalPower()
}

// headRefs asks the voters for the digests of the records they committed for round r
// (headRound: for their last closed round), signed (fetchCommittedDigest), and keeps those
// signed by the peer asked, for this network and run, of round r, sorted by peer. have are
// answers in hand (a look at the heads): those of round r are returned with the new ones
// and their peers not asked again. A peer that refuses the request (a build from before
// it, or one limiting this node's requests) is asked for its whole record (committed)
// instead; one that then answers is asked so for plainFor.
func (j *joiner) headRefs(ctx context.Context, r uint64, have []headRef) []headRef {
	var out []headRef
	skip := map[peer.ID]bool{}
	for _, h := range have {
		if h.round == r || r == headRound {
			out = append(out, h)
			skip[h.from] = true
		}
	}
	now := time.Now()
	var ask, whole []peer.ID
	for _, p := range j.voters() {
		switch until, ok := j.n.wholeHeads.Load(p); {
		case skip[p]:
		case ok && now.Before(until.(time.Time)):
			whole = append(whole, p)
		default:
			ask = append(ask, p)
		}
	}
	answers, refused := j.askAll(ctx, ask, committedDigestRequest(r))
	for p, data := range answers {
		h, err := parseDigestAnswer(data, j.rep.network, j.rep.run, p)
		switch {
		case err != nil:
			j.n.log.Debug("a committed digest refused", "peer", p.ShortString(), "err", err)
		case r == headRound || h.round == r:
			out = append(out, h)
		}
	}
	if whole = append(whole, refused...); len(whole) > 0 {
		all := j.peers
		j.peers = whole
		heads := j.committed(ctx, r)
		j.peers = all
		for _, h := range heads {
			if slices.Contains(refused, h.from) {
				j.n.wholeHeads.Store(h.from, now.Add(plainFor))
			}
		}
		out = append(out, refsOf(heads)...)
	}
	slices.SortFunc(out, func(a, b headRef) int { return cmp.Compare(a.from, b.from) })
	return out
}

// offerRecords asks each peer whose committed record a look at the heads brought for the
// vote it published for that round, as a gap fetch does (fetchRecord: the records
// topic's checks, then the loop's inbox): a node whose gossip with its peers is not (yet)
// flowing learns their votes on the rounds of its window, repairs them, and asks for the
// records of the earlier rounds it lacks. The committed records themselves are never
// taken as votes: a peer that repaired a round holds a record of it other than its vote,
// signed for an audit, and the two would read as a vote cast twice.
func (n *Node) offerRecords(_ context.Context, heads []headRef) { n.checks.askVotes(heads) }

// askVotes is offerRecords on the checks: a gap fetch of each head's round and peer.
func (f *fullChecks) askVotes(heads []headRef) {
	if f.cfg.Fetch == nil {
		return
	}
	for _, h := range heads {
		k := recordKey{round: h.round, signer: h.from.String()}
		if f.records.ask(k, h.from) {
			from := h.from
			f.enqueue(&f.gaps, fmt.Sprint("head", k.round, k.signer), k.round, func(ctx context.Context) { f.fetchRecord(ctx, from, k) })
		}
	}
}

// resync puts a running node whose loop the head watch stopped back on its peers'
// lineage: it resumes from its store as a restart does (the replay checks every stored
// round; the local state is the one last saved), then catches up (catchUpFrom); a core at
// the store's head otherwise (the stopped loop's local work is lost). Its local work
// starts past every round it may have signed shards of. It logs one line and counts it
// for /status and the metrics; it reports whether the node moved.
func (n *Node) resync(ctx context.Context, c *resyncCause) (bool, error) {
	began := time.Now()
	n.train.loop.drain()
	rp, _, _, err := resumeStore(n.train.params, n.opts.Spec, n.host.ID().String(), n.ledger, n.log)
	if err != nil {
		return false, fmt.Errorf("resyncing: %w", err)
	}
	rp.first = max(rp.first, n.train.firstLocal.Load())
	from := rp.state.Round
	n.log.Warn("off the peers' lineage: catching up", "reason", c.why, "head", c.head, "peers_head", c.peers)
	cu, err := n.catchUpFrom(ctx, rp, catchUpWait)
	if err != nil {
		return false, err
	}
	if !cu.moved {
		if err := n.train.reset(rp, n.log); err != nil {
			return false, fmt.Errorf("resyncing: %w", err)
		}
	}
	st := &ResyncStatus{Reason: c.why, From: from, To: n.train.initial.Round, PeersHead: c.peers, Replaced: cu.replaced, Seconds: time.Since(began).Seconds()}
	n.resyncs.Add(1)
	n.lastResync.Store(st)
	if m := n.train.loop.agreeMet; m != nil {
		m.resynced()
	}
	n.log.Info(fmt.Sprintf("resynced from round %d to round %d in %.1f seconds", st.From, st.To, st.Seconds),
		"reason", c.why, "from", st.From, "to", st.To, "peers_head", c.peers, "replaced", st.Replaced, "first_local_round", n.train.firstLocal.Load())
	return cu.moved, nil
}

// drain drops what a stopped loop left queued: a local work start and a checkpoint of
// the lineage it was on. Called only while the loop is stopped.
func (l *loop) drain() {
	select {
	case <-l.train.starts:
	default:
	}
	// The trainer has stopped with the loop: work it was running never reports, and a
	// move of it (outer.merge) must not reach the next run's work.
	l.working, l.lateShift, l.saveDue = false, nil, 0
	l.train.forgetShifts()
	if l.ckpt != nil {
		select {
		case <-l.ckpt.jobs:
		default:
		}
	}
}

// caughtUp rewrites the rounds a catch-up closed again in the status, as a repair does:
// who was included, evidence and roots are the committed rounds'; a round the node never
// closed itself is added, marked CaughtUp, so that the status lists every round up to its
// head.
func (p *progress) caughtUp(rounds []store.Round) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range rounds {
		n := r.Record.Round
		i, found := slices.BinarySearchFunc(p.st.Rounds, n, func(s RoundStatus, n uint64) int { return cmp.Compare(s.Round, n) })
		if !found {
			p.st.Rounds = slices.Insert(p.st.Rounds, i, RoundStatus{Round: n, Rejected: map[string]int{}, CaughtUp: true})
		}
		p.st.NextRound = max(p.st.NextRound, n+1)
		p.rewrite(r.Record, r.State)
		if !found {
			p.st.Rounds[i].Repaired = false
		}
	}
	if len(p.st.Rounds) > maxRounds {
		p.st.Rounds = slices.Delete(p.st.Rounds, 0, len(p.st.Rounds)-maxRounds)
	}
}
