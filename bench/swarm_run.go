package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/node"
)

// running is one started node and what Run returned.
type running struct {
	n    *node.Node
	done chan error
}

// startSwarm starts the bootstrap node, then the training nodes pointed at it, each
// running until ctx ends. stop, always callable, waits for every started node to stop
// (ctx must be cancelled first) and returns the first error one ended with.
func startSwarm(ctx context.Context, opt SwarmOptions, spec *configs.Spec, homes []swarmHome) ([]*node.Node, func() error, error) {
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
	start := func(o node.Options) (*node.Node, error) {
		o.Spec, o.Logger = spec, slog.New(slog.DiscardHandler)
		n, err := node.New(ctx, o)
		if err != nil {
			return nil, err
		}
		r := running{n: n, done: make(chan error, 1)}
		go func() { r.done <- n.Run(ctx) }()
		all = append(all, r)
		return n, nil
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
	nodes := make([]*node.Node, len(homes))
	for i, h := range homes {
		h.cfg.P2P.Bootstrap = []string{bootAddr(addrs, boot)}
		if nodes[i], err = start(node.Options{Home: h.home, Config: h.cfg, Adversary: adversaryOf(opt, i)}); err != nil {
			return nil, stop, fmt.Errorf("node %d: %w", i, err)
		}
	}
	return nodes, stop, nil
}

// bootAddr is the bootstrap node's first address with its peer ID.
func bootAddr(addrs []string, boot *node.Node) string {
	return fmt.Sprintf("%s/p2p/%s", addrs[0], boot.ID())
}

// awaitRounds waits until every honest node has closed and scored the first opt.Rounds
// rounds, writing a line to logw as the honest nodes all close each round.
func awaitRounds(ctx context.Context, opt SwarmOptions, nodes []*node.Node, start time.Time, logw io.Writer) error {
	t := time.NewTicker(swarmPoll)
	defer t.Stop()
	done := 0 // rounds every honest node has scored
	for done < opt.Rounds {
		select {
		case <-ctx.Done():
			return fmt.Errorf("bench swarm: %d of %d rounds closed by every honest node: %w", done, opt.Rounds, ctx.Err())
		case <-t.C:
		}
		scored, loss := scoredRounds(opt, nodes)
		for ; done < min(scored, opt.Rounds); done++ {
			fmt.Fprintf(logw, "round %d: held-out loss %.4f (mean of honest nodes), %s\n", done, loss[done], time.Since(start).Round(time.Millisecond))
		}
	}
	return nil
}

// scoredRounds is how many rounds from 0 every honest node has closed and scored, and the
// honest nodes' mean held-out loss after each of them.
func scoredRounds(opt SwarmOptions, nodes []*node.Node) (int, []float64) {
	scored := -1
	var sum []float64
	honest := 0
	for i, n := range nodes {
		if adversaryOf(opt, i) != "" {
			continue
		}
		honest++
		k := 0
		for _, r := range measured(n.Status().Training, opt.Rounds) {
			if r.Round != uint64(k) || r.Loss == nil {
				break
			}
			if k == len(sum) {
				sum = append(sum, 0)
			}
			sum[k] += *r.Loss
			k++
		}
		if scored < 0 || k < scored {
			scored = k
		}
	}
	for i := range sum {
		sum[i] /= float64(honest)
	}
	return max(scored, 0), sum
}
