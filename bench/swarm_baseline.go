package bench

import (
	"context"
	"fmt"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/node"
)

// allReduceLoss is the swarm's dense AllReduce baseline at equal tokens: one worker per
// honest peer on that peer's slice of the nodes' data, the spec's model, θ_0, batch and
// inner optimizer, gradients averaged every step for rounds·H steps (runAllReduce, in this
// process), scored on the held-out batch the nodes score θ on.
func allReduceLoss(ctx context.Context, spec *configs.Spec, peers []string, rounds int) (float64, error) {
	p, err := node.NewParams(spec)
	if err != nil {
		return 0, err
	}
	train, parts, eval, err := p.TaskData("", peers)
	if err != nil {
		return 0, fmt.Errorf("bench swarm: the baseline's data: %w", err)
	}
	opt := FromSpec(p)
	opt.Workers, opt.Rounds = len(peers), rounds
	ws, err := newWorkersOn(opt, &task{train: train, newModel: specModel(p)}, parts)
	if err != nil {
		return 0, err
	}
	final, err := runAllReduce(ctx, opt, ws)
	if err != nil {
		return 0, fmt.Errorf("bench swarm: the AllReduce baseline: %w", err)
	}
	loss, _, err := evaluate(ws.models[0], final, eval)
	return loss, err
}

// honestPeers are the peer IDs of the honest training nodes.
func honestPeers(opt SwarmOptions, homes []swarmHome) []string {
	var out []string
	for i, h := range homes {
		if adversaryOf(opt, i) == "" {
			out = append(out, h.id)
		}
	}
	return out
}
