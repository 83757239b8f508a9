package node

import (
	"fmt"
	"math"

	"github.com/lowband/lowband/training/compress"
)

// dueCheck is the part of the shard content check that needs the shard's round: which
// tensors a contribution of that round carries (compression.dense_every), by the pure
// schedule the round's close decodes with (compress.Config.Due). A shard that carries a
// tensor not due in its round is refused at validation; so is a shard that is a whole
// contribution (count 1) and does not cover every due tensor exactly, as the close
// requires (Message.NewRangeReaderDue). One shard of several cannot show alone that a
// due tensor is missing: the close leaves such a contribution out, on every node alike.
// It is not evidence: invalid-content evidence is the round-free check
// (Params.CheckContent), which every replay of every record re-runs.
type dueCheck struct {
	cfg    compress.Config
	like   []compress.Tensor // the model's tensors in order (names and shapes)
	shapes [][]int
	lim    compress.Limits
}

// newDueCheck is the schedule check of the network of p.
func newDueCheck(p *Params) (*dueCheck, error) {
	init, err := p.Initial()
	if err != nil {
		return nil, err
	}
	d := &dueCheck{cfg: p.RoundConfig("", 1).Compress, lim: p.Limits}
	for _, t := range init.Params {
		d.like = append(d.like, compress.Tensor{Name: t.Name, Shape: t.Shape})
		d.shapes = append(d.shapes, t.Shape)
	}
	return d, nil
}

// check checks the payload of shard index of count of a contribution to round r, which
// passed the content check.
func (d *dueCheck) check(r uint64, count uint32, payload []byte) error {
	due := d.cfg.Due(r, d.shapes)
	if due == nil && count != 1 {
		return nil // every tensor due: a part of a contribution may carry any
	}
	m, err := compress.DecodeShard(payload, d.lim)
	if err != nil {
		return err
	}
	if count == 1 {
		if _, err := m.NewRangeReaderDue(d.like, due); err != nil {
			return fmt.Errorf("round %d: %w", r, err)
		}
		return nil
	}
	shapes := make(map[string][]int, len(d.like))
	for i, t := range d.like {
		if due[i] {
			shapes[t.Name] = t.Shape
		}
	}
	// The shape check alone decides: with no norm bound, a shard that passed the content
	// check passes the rest from its factors.
	if err := m.Check(shapes, math.Inf(1)); err != nil {
		return fmt.Errorf("round %d: a tensor not due: %w", r, err)
	}
	return nil
}
