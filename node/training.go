package node

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/node/core"
	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/training"
	"github.com/lowband/lowband/training/round"
)

// newCore builds the node's round decisions from the network's params, at st with the
// ledger state led of the same round; key is the node's identity, which signs its records.
func newCore(p *Params, s *configs.Spec, key crypto.PrivKey, st round.State, led *incentives.State) (*core.Core, error) {
	id, err := peer.IDFromPrivateKey(key)
	if err != nil {
		return nil, err
	}
	self := id.String()
	return core.New(core.Config{
		Self: self, Network: s.NetworkID(), Run: s.Run,
		Round: p.RoundConfig(self, 1), Deadline: p.Deadline, Checker: p.Checker, Limits: p.Limits,
		Identity: key, Depth: uint64(s.Agreement.RepairDepth),
	}, st, led)
}

// trainingParts are what a training node adds to a bootstrap node.
type trainingParts struct {
	params  *Params
	spec    *configs.Spec
	key     crypto.PrivKey // the node's identity: its core signs records with it
	initial round.State
	resumed resumePoint // where training started (resume); a catch-up goes on from it, then lets it go
	// firstLocal is the first round the node does local work for: where it started, or
	// where a late join or a catch-up moved it (reset).
	firstLocal atomic.Uint64
	loop       *loop
	prog       *progress
	saving     sync.Mutex // held while a local state is written (saveLocal)
}

// reset gives the loop, before it runs, a new core at rp (a late join), with the rounds
// rp replayed to repair and local work from rp.first on.
func (tp *trainingParts) reset(rp resumePoint, log *slog.Logger) error {
	c, err := newCore(tp.params, tp.spec, tp.key, rp.state, rp.ledger)
	if err != nil {
		return err
	}
	if err := restoreLocal(rp, c, tp.loop.train, tp.params.Training.InnerSteps, log); err != nil {
		return err
	}
	tp.loop.core, tp.initial = c, rp.state
	tp.firstLocal.Store(rp.first)
	tp.loop.setView()
	return nil
}

// newTraining builds the node's training: data, trainer, evaluator, core, progress and the
// loop, from the network's params and the node's identity key, starting at rp (freshStart,
// or resume). deps are the loop's edges; g the gauges progress reads (inbox depth is the
// loop's own).
func newTraining(p *Params, s *configs.Spec, cfg *configs.Config, key crypto.PrivKey, rp resumePoint, clk clock, deps loopDeps, g gauges, log *slog.Logger, reg prometheus.Registerer) (*trainingParts, error) {
	st := rp.state
	c, err := newCore(p, s, key, st, rp.ledger)
	if err != nil {
		return nil, err
	}
	id, err := peer.IDFromPrivateKey(key)
	if err != nil {
		return nil, err
	}
	self := id.String()
	d, err := loadData(p, cfg.Training.Data, self)
	if err != nil {
		return nil, err
	}
	tr, err := newTrainer(p, d, self)
	if err != nil {
		return nil, err
	}
	if err := restoreLocal(rp, c, tr, p.Training.InnerSteps, log); err != nil {
		return nil, err
	}
	ev, err := newEvaluator(p, d)
	if err != nil {
		return nil, err
	}
	var l *loop
	g.inbox = func() int { return l.inboxDepth() }
	prog, err := newProgress(log, reg, g, TrainingStatus{
		Task: p.Training.Task, Attestation: cfg.Attest.Producer, Insecure: cfg.Attest.Producer == configs.KindSim,
		DenseBytesPerRound: denseBytes(st.Params),
	})
	if err != nil {
		return nil, err
	}
	l = newLoop(c, clk, deps, log, prog, tr, ev)
	l.startWait = p.Deadline.Max
	if l.agreeMet, err = newAgreementMetrics(reg, l.Agreement); err != nil {
		return nil, err
	}
	tp := &trainingParts{params: p, spec: s, key: key, initial: st, resumed: rp, loop: l, prog: prog}
	tp.firstLocal.Store(rp.first)
	return tp, nil
}

// denseBytes is the size of one dense fp32 pseudo-gradient of ts: 4 bytes a parameter.
func denseBytes(ts []training.Tensor) int64 {
	var n int64
	for _, t := range ts {
		n += int64(len(t.Data))
	}
	return 4 * n
}

// liveEstimate is about the most heap a training node of a model of n values holds, with
// a little headroom: ten vectors of the model's size in float64 (θ and the states kept to
// repair the last rounds, the start the trainer trains, its gradients and moments, the
// codec's residuals and the eager start's own pseudo-gradient), four more when the outer
// step has momentum (each state's buffer), and 24 MiB for the rest (the charlm default:
// 145 MiB against 125 measured live).
func liveEstimate(n int, momentum bool) int64 {
	v := int64(10)
	if momentum {
		v += 4
	}
	return int64(n)*8*v + 24<<20
}

// startTraining builds the node's training before its host starts, since the validators
// feed the loop from the first message: the full checks, the attestor, the loop. Their
// edges reach the host through n once it exists.
func (n *Node) startTraining(key crypto.PrivKey, met *gossipMetrics, reg prometheus.Registerer) error {
	id, err := peer.IDFromPrivateKey(key)
	if err != nil {
		return err
	}
	s := n.opts.Spec
	p, err := NewParams(s)
	if err != nil {
		return fmt.Errorf("network spec: %w", err)
	}
	if lim, need := debug.SetMemoryLimit(-1), liveEstimate(p.Limits.MaxElements, s.Training.Outer.Momentum != 0); lim < need {
		n.log.Warn("the memory limit is below what a node of this network's model holds: the collector will run nearly all the time; raise memory_limit_mib",
			"limit_mib", lim>>20, "needs_mib", need>>20)
	}
	publish := func(ctx context.Context, kind string, data []byte) error {
		return n.host.Publish(ctx, kind, n.checks.outgoing(kind, data)) // a vote goes as a reference
	}
	w := wireOf(s)
	due, err := newDueCheck(p)
	if err != nil {
		return err
	}
	n.checks = newFullChecks(fullConfig{
		Self: id, Wire: w, Checker: p.Checker, EvidenceWindow: p.Ledger.EvidenceWindow, Due: due,
		Ledger: n.ledger.state.Load,
		Fetch:  newFetchClient(lateHost{n}, s.NetworkID(), w),
		Peers:  func() []peer.ID { return n.host.TopicPeers(p2p.KindRecords) },
		// n.train is set once newTraining returns, before the validators are registered
		// (Run subscribes later); nothing is delivered before it, and what would be is
		// Ignore (busy).
		Deliver: func(ev any) bool { return n.train != nil && n.train.loop.deliver(ev) },
		Publish: publish, Metrics: met, Log: n.log,
	})
	att, err := newAttestor(n.opts.Config.Attest, n.opts.Home.Dir, key, s, n.checks.reg, publish)
	if err != nil {
		return fmt.Errorf("attestation producer: %w", err)
	}
	deps := loopDeps{
		commit:  func(c *core.Commit) error { return n.commitRound(c, key) },
		repair:  func(rp *core.Repair) error { return n.repairRounds(rp, key) },
		publish: publish, attest: att.attest,
		fetch: n.fetchWants, view: n.checks.setView,
		ready:  func(ctx context.Context) bool { return n.genesisPresent(ctx, p.Genesis, id) },
		absent: func() []string { a, _ := n.genesisAbsent(p.Genesis, id); return a },
		save:   n.saveLocal,
	}
	g := gauges{
		bandwidth: func() (int64, int64) { return n.host.Bandwidth() },
		verifyCPU: func() time.Duration { return time.Duration(n.checks.verifySeconds() * float64(time.Second)) },
		stash:     func() int { e, _ := n.checks.stash.Len(); return e },
	}
	rp, err := resume(p, s, id.String(), n.ledger, n.log)
	if err != nil {
		return err
	}
	n.train, err = newTraining(p, s, n.opts.Config, key, rp, realClock{}, deps, g, n.log, reg)
	if err != nil {
		return err
	}
	n.train.loop.train.compute, n.train.loop.eval.compute = n.opts.Compute, n.opts.Compute
	if err := n.startCheckpoints(reg); err != nil || n.opts.Adversary == "" {
		return err
	}
	return n.startAdversary(key)
}

// genesisPresent reports whether round 0 need wait no longer for the genesis peers
// (genesisAbsent). While some are neither connected nor found advertised, it looks the
// rendezvous up for them, at most about every genesisLookEvery, off the caller's goroutine.
func (n *Node) genesisPresent(ctx context.Context, g incentives.Genesis, self peer.ID) bool {
	absent, unfound := n.genesisAbsent(g, self)
	if unfound > 0 {
		n.genesisLook.start(ctx, func(ctx context.Context) { _, _ = n.host.LookupRendezvous(ctx) })
	}
	was := n.genesisQuorum
	ready, since := quorumWait(absent, unfound, was, time.Now(), n.train.params.Deadline.Min)
	n.genesisQuorum = since
	if ready && unfound > 0 {
		n.log.Info("starting without the genesis peers not found: the others have been there for deadline_min",
			"waited", time.Since(was).Round(time.Second), "not_found", absent)
	}
	return ready
}

// quorumWait decides whether round 0 waits no longer, from absentOf's answer at now (its
// last unfound entries name the genesis peers neither connected nor found): at once when
// nothing is absent; when only peers not found are, once that has been so for wait
// (deadline_min). since is when that began (zero when it has not), returned updated. A
// node that cannot get onto the network (behind a bootstrap peer too busy to answer, its
// routing table empty: it cannot advertise) would otherwise hold every other node's round
// 0 for the whole start wait, deadline_max, as in a 100-node swarm on a loaded machine; it
// joins the run once it gets on.
func quorumWait(absent []string, unfound int, since, now time.Time, wait time.Duration) (bool, time.Time) {
	switch {
	case len(absent) == 0:
		return true, time.Time{}
	case len(absent) > unfound:
		return false, time.Time{}
	case since.IsZero():
		return false, now
	}
	return now.Sub(since) >= wait, since
}

// genesisAbsent says why round 0 still waits for the genesis peers (nothing: it need not),
// and how many of them are neither connected nor found advertised (absentOf).
func (n *Node) genesisAbsent(g incentives.Genesis, self peer.ID) ([]string, int) {
	return absentOf(g, n.ledger.state.Load(), self, n.host.TopicPeers(p2p.KindShards), n.host.ConnectedPeers(), n.host.FoundAdvertised)
}

// genesisTopicPeers is how many peers (or as many as there are other genesis peers, when
// fewer) round 0 wants on the shards topic: gossipsub's D_lo, below which its mesh is short.
var genesisTopicPeers = p2p.MeshDegreeLow

// absentOf says why round 0 still waits (nothing: it need not), from the peers of the
// shards topic, the connected ones, whether a peer was found advertised in the rendezvous,
// and the genesis ledger led. Round 0 starts once
//   - the node has genesisTopicPeers peers on the shards topic (its first shards do not go
//     to an empty mesh),
//   - the genesis peers it is connected to or has on the topic, with itself, carry more
//     than half of the genesis stake: a handshake proves a peer is up, and
//   - every other genesis peer is at least found advertised.
//
// The rendezvous lists the whole swarm, while the node's connections are a few dozen in a
// swarm of 100: with the topic alone, round 0 waited its whole start wait past about 25
// genesis peers. But a DHT node's reply can list any ID, and a provider record lives two
// days: found is no proof, so it stands only for a minority. It returns, too, how many
// genesis peers are neither connected nor found (a lookup may find them).
func absentOf(g incentives.Genesis, led *incentives.State, self peer.ID, topic, connected []peer.ID, found func(peer.ID) bool) ([]string, int) {
	var out []string
	others := 0
	w := led.Power(self.String())
	for _, st := range g.Stakes {
		id, err := peer.Decode(st.Peer)
		if err != nil || id == self {
			continue
		}
		others++
		switch {
		case slices.Contains(topic, id) || slices.Contains(connected, id):
			w += led.Power(id.String())
		case !found(id):
			out = append(out, id.ShortString())
		}
	}
	unfound := len(out)
	var why []string
	if want := min(others, genesisTopicPeers); len(topic) < want {
		why = append(why, fmt.Sprintf("%d of %d peers wanted on the shards topic", len(topic), want))
	}
	if 2*w <= led.TotalPower() {
		why = append(why, fmt.Sprintf("the genesis peers connected carry %d of %d of the stake, more than half wanted", w, led.TotalPower()))
	}
	return append(why, out...), unfound
}

// genesisLookEvery is about how often a node waiting for the genesis peers looks the
// rendezvous up (each wait drawn from half to one and a half times it, so that a swarm
// started at once does not look up in step): each lookup costs the DHT nodes nearest the
// rendezvous key a reply listing every advertised peer, and the wait lasts at most
// deadline_max.
const genesisLookEvery = 10 * time.Second

// oneLook runs a function off the caller's goroutine, one at a time, at most about once
// per genesisLookEvery. Safe for concurrent use.
type oneLook struct {
	mu   sync.Mutex
	next time.Time // the earliest start of the next run
	busy bool
}

// start runs f(ctx) on a goroutine of its own, bounded by genesisLookEvery, unless one
// runs or its time has not come.
func (o *oneLook) start(ctx context.Context, f func(context.Context)) {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := time.Now()
	if o.busy || now.Before(o.next) {
		return
	}
	o.busy = true
	o.next = now.Add(genesisLookEvery/2 + rand.N(genesisLookEvery))
	go func() {
		c, cancel := context.WithTimeout(ctx, genesisLookEvery)
		defer cancel()
		f(c)
		o.mu.Lock()
		o.busy = false
		o.mu.Unlock()
	}()
}

// serveFetch answers the fetch protocol from the bundle registry and the content store.
func (n *Node) serveFetch() {
	srv := newFetchServer(n.checks.reg, n.checks.content, n.checks.records)
	srv.ckpts = n.ledger.st
	srv.rounds = storedRounds{st: n.ledger.st, maxPayload: n.opts.Spec.Training.Compression.MaxShardBytes}
	srv.limits = newFetchLimits(n.checks.cfg.Metrics.fetchRefused)
	srv.wire = n.wire
	n.host.Handle(string(p2p.FetchProtocol(n.network)), maxFetchRequest, srv.handle)
}

// fetchWants asks the peers of the shards topic for the shard slots a round about to close
// lacks, and for the shards a repair wants by CID, the slot's or entry's own peer first,
// off the loop's goroutine.
func (n *Node) fetchWants(_ context.Context, wants []core.Want) {
	peers := n.host.TopicPeers(p2p.KindShards)
	connected := n.host.ConnectedPeers()
	slotsFull := false
	for _, w := range wants {
		order := slices.Clone(peers)
		if id, err := peer.Decode(w.Peer); err == nil && id != n.host.ID() {
			// The slot's or entry's peer signed the shard: ask it first, also when it is
			// connected but the topic does not list it yet (gossip with a restarted peer
			// lags its connection; a mesh forms again after a partition). It serves its
			// own shards and, to a validator that asks where a shard came from, its bundle.
			switch i := slices.Index(order, id); {
			case i > 0:
				order[0], order[i] = order[i], order[0]
			case i < 0:
				if _, ok := slices.BinarySearch(connected, id); ok {
					order = append([]peer.ID{id}, order...)
				}
			}
		}
		switch {
		case w.CID != nil:
			n.checks.wantCID(repairWant{round: w.Round, peer: w.Peer, cid: w.CID, count: w.Count, taken: w.Taken, peers: order})
		case !slotsFull:
			// With MaxAsync fetches in flight the other slots wait for the next round.
			slotsFull = !n.checks.wantShard(order, slot{round: w.Round, peer: w.Peer, index: w.Index})
		}
	}
}

// lateHost is the node's host for what is built before it: used only once it runs.
type lateHost struct{ n *Node }

func (h lateHost) Request(ctx context.Context, to peer.ID, proto string, req []byte, maxResp int) ([]byte, error) {
	return h.n.host.Request(ctx, to, proto, req, maxResp)
}

// subscribe joins the topics the node needs as a subscriber, so that gossipsub puts it in
// their meshes. What they deliver has passed the validators, which fed the loop already:
// the subscriptions are drained until ctx ends.
func (n *Node) subscribe(ctx context.Context) error {
	for _, kind := range p2p.Kinds {
		sub, err := n.host.Subscribe(kind)
		if err != nil {
			return err
		}
		go func() {
			defer sub.Cancel()
			for {
				if _, err := sub.Next(ctx); err != nil {
					return
				}
			}
		}()
	}
	return nil
}
