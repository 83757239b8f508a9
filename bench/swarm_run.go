package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/node"
	"github.com/lowband/lowband/p2p"
)

// running is one started node and what Run returned.
type running struct {
	n    *node.Node
	done chan error
}

// swarmLogger is a node's logger: nowhere, or with LOWBAND_BENCH_LOG_DIR set, a file
// there named after the node's home (debug level), for finding out why a run went wrong.
// The file is left open until the process ends.
func swarmLogger(home string) *slog.Logger {
	dir := os.Getenv("LOWBAND_BENCH_LOG_DIR")
	if dir == "" {
		return slog.New(slog.DiscardHandler)
	}
	f, err := os.Create(filepath.Join(dir, filepath.Base(home)+".log"))
	if err != nil {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// startSwarm starts the bootstrap node, then the training nodes pointed at it, each
// running until ctx ends, with link as their node.Options.P2P. stop, always callable, waits for every started node to stop
// (ctx must be cancelled first) and returns the first error one ended with.
func startSwarm(ctx context.Context, opt SwarmOptions, spec *configs.Spec, homes []swarmHome, link func(*p2p.Config) error) ([]*node.Node, func() error, error) {
	var all []running
	stop := func() error {
		var errs []error
		for _, r := range all {
			if err := <-r.done; err != nil {
				errs = append(errs, fmt.Errorf("node %s: %w", r.n.ID(), err))
			}
		}
		return errors.Join(errs...)
	}
	var built []*node.Node // made, not running yet
	gate := newComputeGate(opt.ComputeSlots)
	build := func(o node.Options) (*node.Node, error) {
		o.Spec, o.Logger, o.P2P, o.Compute = spec, swarmLogger(o.Home.Dir), link, gate.forNode()
		n, err := node.New(ctx, o)
		if err == nil {
			built = append(built, n)
		}
		return n, err
	}
	run := func() {
		for _, n := range built {
			r := running{n: n, done: make(chan error, 1)}
			go func() { r.done <- n.Run(ctx) }()
			all = append(all, r)
		}
		built = nil
	}
	start := func(o node.Options) (*node.Node, error) {
		n, err := build(o)
		run()
		return n, err
	}
	bh, bc, err := newSwarmHome(opt.Dir + "/bootstrap")
	if err != nil {
		return nil, stop, err
	}
	boot, err := start(node.Options{Home: bh, Config: bc, Role: configs.RoleBootstrap})
	if err != nil {
		return nil, stop, fmt.Errorf("bootstrap node: %w", err)
	}
	addrs := boot.Status().Addresses
	if len(addrs) == 0 {
		return nil, stop, errors.New("bench swarm: the bootstrap node has no address")
	}
	// Every training node is made (its host up and dialing the bootstrap node) before any
	// runs: started one after another, the first would wait for the others at round 0 only
	// until deadline_max, and a node that finds its peers past round 0 joins late, which
	// with more than about 31 equal voters never succeeds (docs/architecture.md, known
	// weaknesses).
	nodes := make([]*node.Node, len(homes))
	for i, h := range homes {
		h.cfg.P2P.Bootstrap = []string{bootAddr(addrs, boot)}
		if nodes[i], err = build(node.Options{Home: h.home, Config: h.cfg, Adversary: adversaryOf(opt, i)}); err != nil {
			for _, n := range built {
				n.Close()
			}
			return nil, stop, fmt.Errorf("node %d: %w", i, err)
		}
	}
	run()
	return nodes, stop, nil
}

// bootAddr is the bootstrap node's first address with its peer ID.
func bootAddr(addrs []string, boot *node.Node) string {
	return fmt.Sprintf("%s/p2p/%s", addrs[0], boot.ID())
}

// awaitRounds waits until every honest node has closed and scored the first opt.Rounds
// rounds, writing a line to logw as the honest nodes all close each round.
func awaitRounds(ctx context.Context, opt SwarmOptions, nodes []*node.Node, start time.Time, wire wireSum, logw io.Writer) error {
	t := time.NewTicker(swarmPoll)
	defer t.Stop()
	done := 0 // rounds every honest node has scored
	var last p2p.WireSnapshot
	for done < opt.Rounds {
		select {
		case <-ctx.Done():
			return fmt.Errorf("bench swarm: %d of %d rounds closed by every honest node: %w", done, opt.Rounds, ctx.Err())
		case <-t.C:
		}
		rs := scoredRounds(opt, nodes)
		for ; done < min(len(rs), opt.Rounds); done++ {
			r := rs[done]
			fmt.Fprintf(logw, "round %d: held-out loss %.4f (mean of honest nodes), %d-%d included, %d state root(s), %s\n",
				done, r.loss, r.minIncluded, r.maxIncluded, len(r.roots), time.Since(start).Round(time.Millisecond))
			if now, n := wire(); n > 0 {
				fmt.Fprintf(logw, "  sent per node since the last line: %s\n", wireLine(now, last, n))
				last = now
			}
		}
	}
	return nil
}

// roundView is a round as the honest nodes closed it: their mean held-out loss, the
// fewest and most contributions one included, and the distinct state roots they hold.
type roundView struct {
	loss                     float64
	scored                   int // honest nodes that scored it (not those that caught up past it)
	minIncluded, maxIncluded int
	roots                    map[string]bool
}

// scoredRounds returns the rounds from 0 that every honest node has closed and scored, or
// caught up past.
func scoredRounds(opt SwarmOptions, nodes []*node.Node) []roundView {
	var out []roundView
	scored := -1
	for i, n := range nodes {
		if adversaryOf(opt, i) != "" {
			continue
		}
		k := 0
		for _, r := range measured(n.Status().Training, opt.Rounds) {
			// A round a catch-up closed again (the node resynced past it) has no loss of its
			// own, and rounds a jump to a checkpoint passed over are not listed.
			if r.Round < uint64(k) || r.Loss == nil && !r.CaughtUp {
				break
			}
			for ; uint64(k) < r.Round; k++ {
				if k == len(out) {
					out = append(out, roundView{roots: map[string]bool{}})
				}
			}
			if k == len(out) {
				out = append(out, roundView{minIncluded: len(r.Included), roots: map[string]bool{}})
			}
			v := &out[k]
			if r.Loss != nil {
				v.loss += *r.Loss
				v.scored++
			}
			v.minIncluded, v.maxIncluded = min(v.minIncluded, len(r.Included)), max(v.maxIncluded, len(r.Included))
			v.roots[r.StateRoot] = true
			k++
		}
		if scored < 0 || k < scored {
			scored = k
		}
	}
	out = out[:max(scored, 0)]
	for i := range out {
		out[i].loss /= float64(max(out[i].scored, 1))
	}
	return out
}

// settleWait is how long the bench waits at least, once every honest node has scored the
// last round, for them to hold one state root of it: a node repairs a round once its
// peers' records reach it, within a round or two of the close.
const settleWait = 30 * time.Second

// settleFor is how long settleRoots waits: settleWait, or twice deadline_max when that is
// longer: a repair of the last round waits for the votes of the nodes that close it last,
// up to deadline_max after their start, and a node that closed it early may be repaired
// again as more votes come.
func settleFor(opt SwarmOptions) time.Duration {
	return max(settleWait, time.Duration(2*opt.DeadlineMax*float64(time.Second)))
}

// settleRoots waits, at most settleFor or until ctx ends, for the honest nodes to hold one
// state root of the last measured round, and says on logw how long that took or that they
// did not.
func settleRoots(ctx context.Context, opt SwarmOptions, nodes []*node.Node, logw io.Writer) {
	t := time.NewTicker(swarmPoll)
	defer t.Stop()
	start := time.Now()
	for {
		rs := scoredRounds(opt, nodes)
		if len(rs) >= opt.Rounds && len(rs[opt.Rounds-1].roots) == 1 {
			fmt.Fprintf(logw, "settled: the honest nodes hold one state root of the last after %s\n", time.Since(start).Round(time.Millisecond))
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(settleFor(opt) - time.Since(start)):
		case <-t.C:
			continue
		}
		fmt.Fprintf(logw, "not settled: the honest nodes still hold different state roots of the last after %s\n", time.Since(start).Round(time.Millisecond))
		return
	}
}

// wireSum adds up the honest nodes' wire counts and says how many nodes they were; 0 where
// the hosts cannot see their streams' bytes (loopback).
type wireSum func() (p2p.WireSnapshot, int)

// wireLine is what the honest nodes sent between two sums, per node, in KB: the streams
// by protocol, and gossip's largest parts.
func wireLine(now, was p2p.WireSnapshot, n int) string {
	kb := func(now, was map[string]int64, k string) float64 { return float64(now[k]-was[k]) / float64(n) / 1000 }
	var b strings.Builder
	var total float64
	for _, k := range slices.Sorted(maps.Keys(now.Sent)) {
		total += kb(now.Sent, was.Sent, k)
	}
	fmt.Fprintf(&b, "%.1f KB", total)
	for _, k := range slices.Sorted(maps.Keys(now.Sent)) {
		fmt.Fprintf(&b, ", %s %.1f", k, kb(now.Sent, was.Sent, k))
	}
	b.WriteString(" (gossip:")
	for _, k := range slices.Sorted(maps.Keys(now.Gossip)) {
		if v := kb(now.Gossip, was.Gossip, k); v >= 0.5 {
			fmt.Fprintf(&b, " %s %.1f", k, v)
		}
	}
	b.WriteString(")")
	per := func(now, was map[string]int64, k string) float64 { return float64(now[k]-was[k]) / float64(n) }
	for _, k := range slices.Sorted(maps.Keys(now.GossipMsgs)) {
		fmt.Fprintf(&b, ", %s %.1f sent, %.1f duplicates", k, per(now.GossipMsgs, was.GossipMsgs, k), per(now.Duplicates, was.Duplicates, k))
	}
	return b.String()
}

// computeGate shares slots compute slots among the swarm's nodes (nil: no gate). Its
// forNode gives each node its node.Options.Compute. A freed slot goes to the waiting node
// that has computed least so far (ties: the first to ask): nodes sharing a few cores then
// keep pace with one another, as nodes on equal machines of their own would, rather than
// drift apart by whole rounds while the ones ahead wait for the others' compute.
type computeGate struct {
	mu      sync.Mutex
	free    int
	waiting []*computeWaiter
	asked   uint64 // how many asks so far, to order ties
}

type computeWaiter struct {
	done, asked uint64 // the node's computes so far; the ask's order
	ready       chan struct{}
}

func newComputeGate(slots int) *computeGate {
	if slots <= 0 {
		return nil
	}
	return &computeGate{free: slots}
}

// forNode is one node's node.Options.Compute (nil for a nil gate).
func (g *computeGate) forNode() func() func() {
	if g == nil {
		return nil
	}
	var done atomic.Uint64 // this node's computes so far (inner steps and evaluations)
	return func() func() {
		g.acquire(done.Add(1) - 1)
		return g.release
	}
}

func (g *computeGate) acquire(done uint64) {
	g.mu.Lock()
	g.asked++
	if g.free > 0 && len(g.waiting) == 0 {
		g.free--
		g.mu.Unlock()
		return
	}
	w := &computeWaiter{done: done, asked: g.asked, ready: make(chan struct{})}
	g.waiting = append(g.waiting, w)
	g.mu.Unlock()
	<-w.ready // the slot is handed over by release
}

func (g *computeGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.waiting) == 0 {
		g.free++
		return
	}
	k := 0
	for i, w := range g.waiting {
		if w.done < g.waiting[k].done || w.done == g.waiting[k].done && w.asked < g.waiting[k].asked {
			k = i
		}
	}
	w := g.waiting[k]
	g.waiting = slices.Delete(g.waiting, k, k+1)
	close(w.ready)
}
