package node

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/lowband/lowband/node/checkpoint"
)

// chunkResult is one chunk fetched and checked, or why not.
type chunkResult struct {
	i    int
	data []byte
	err  error
}

// chunks fetches the chunks of m from the live peers, s.parallel requests at once, each
// from the next peer in turn. A chunk that does not come, or does not match m, costs its
// peer its place and is asked of another. It fails when no peer is left or ctx ends.
func (s *ckptSyncer) chunks(ctx context.Context, m *checkpoint.Manifest, ps *peerSet) ([][]byte, error) {
	n := len(m.Chunks)
	jobs := make(chan int, n) // each index is queued at most once at a time
	for i := range n {
		jobs <- i
	}
	ctx, cancel := context.WithCancel(ctx)
	results := make(chan chunkResult)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	for range min(max(s.parallel, 1), n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-ctx.Done():
					return
				case i := <-jobs:
					data, err := s.chunk(ctx, m, i, ps)
					select {
					case results <- chunkResult{i: i, data: data, err: err}:
					case <-ctx.Done():
						return
					}
				}
			}
		}()
	}
	out := make([][]byte, n)
	for done := 0; done < n; {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case r := <-results:
			switch {
			case errors.Is(r.err, errNoProviders):
				return nil, fmt.Errorf("chunk %d of %d: %w", r.i, n, r.err)
			case r.err != nil:
				jobs <- r.i
			default:
				out[r.i] = r.data
				done++
			}
		}
	}
	return out, nil
}

// chunk asks the next live peer for chunk i of m and checks it; a peer that fails is
// dropped. errNoProviders when no peer is left.
func (s *ckptSyncer) chunk(ctx context.Context, m *checkpoint.Manifest, i int, ps *peerSet) ([]byte, error) {
	p, ok := ps.pick()
	if !ok {
		return nil, errNoProviders
	}
	data, err := s.request(ctx, p, fetchRequest{kind: fetchChunk, hash: m.Chunks[i]})
	if err != nil {
		s.dropFor(ps, p, err)
		return nil, err
	}
	if err := m.CheckChunk(i, data); err != nil {
		s.drop(ps, p, dropGarbage, err)
		return nil, err
	}
	return data, nil
}
