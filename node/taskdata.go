package node

import (
	"errors"

	"github.com/lowband/lowband/training"
)

// TaskData is the spec's task data as the network's nodes load it from path (empty: the
// task's default): the training set, the slice of it each of peers trains on, and the
// held-out batch every node scores θ on. Benchmarks train baselines on it, to compare
// with the network on the same samples.
func (p *Params) TaskData(path string, peers []string) (train training.Dataset, slices [][]int, eval training.Batch, err error) {
	if len(peers) == 0 {
		return nil, nil, training.Batch{}, errors.New("task data: no peers")
	}
	d, err := loadData(p, path, peers[0])
	if err != nil {
		return nil, nil, training.Batch{}, err
	}
	slices = make([][]int, len(peers))
	slices[0] = d.slice
	for i, id := range peers[1:] {
		if slices[i+1], err = p.Slice(id, d.train.Len()); err != nil {
			return nil, nil, training.Batch{}, err
		}
	}
	return d.train, slices, d.eval, nil
}
