package node

import (
	"container/heap"
	"context"
	"sync"
)

// jobQueue holds fetches that must not be dropped for want of a slot (a repair asks for
// each shard once; a missing record is asked of a forwarder once), for a few workers of
// their own that run them oldest round first (the first to leave the repair window),
// each key once while it is queued or running. It is bounded: past maxJobs a job is
// dropped. The zero value is ready.
type jobQueue struct {
	mu      sync.Mutex
	pending jobHeap
	queued  map[string]bool
	seq     uint64 // order of arrival, among jobs of one round
	running int
	pool    chan struct{} // the workers' slots (goIn)
}

type queuedJob struct {
	key        string
	round, seq uint64
	run        func(ctx context.Context)
}

// jobHeap orders jobs by round, then arrival (container/heap).
type jobHeap []queuedJob

func (h jobHeap) Len() int { return len(h) }
func (h jobHeap) Less(i, j int) bool {
	return h[i].round < h[j].round || h[i].round == h[j].round && h[i].seq < h[j].seq
}
func (h jobHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *jobHeap) Push(x any)   { *h = append(*h, x.(queuedJob)) }
func (h *jobHeap) Pop() any {
	old := *h
	j := old[len(old)-1]
	*h = old[:len(old)-1]
	return j
}

// Bounds of a job queue.
const (
	// maxJobs: a record lists at most incentives.MaxContributions contributions of at
	// most 256 shards, and a repair rarely needs more than a few rounds' worth.
	maxJobs = 1 << 16
	// jobWorkers run a queue's jobs: one peer that never answers holds one for the fetch
	// timeout, not all.
	jobWorkers = 4
)

// enqueue queues run, for round, under key unless a job of key is queued or running, or
// the queue is full, and starts a worker when fewer than jobWorkers run. It reports
// whether it queued.
func (f *fullChecks) enqueue(q *jobQueue, key string, round uint64, run func(ctx context.Context)) bool {
	q.mu.Lock()
	if q.queued == nil {
		q.queued, q.pool = map[string]bool{}, make(chan struct{}, jobWorkers)
	}
	if q.queued[key] || len(q.pending) >= maxJobs {
		q.mu.Unlock()
		return false
	}
	q.queued[key] = true
	q.seq++
	heap.Push(&q.pending, queuedJob{key: key, round: round, seq: q.seq, run: run})
	start := q.running < jobWorkers
	if start {
		q.running++
	}
	q.mu.Unlock()
	if start && !f.goIn(q.pool, func(ctx context.Context) { q.work(ctx) }) {
		q.mu.Lock()
		q.running--
		q.mu.Unlock()
	}
	return true
}

// work runs queued jobs, oldest round first, until none is left or ctx ends.
func (q *jobQueue) work(ctx context.Context) {
	for {
		q.mu.Lock()
		if len(q.pending) == 0 || ctx.Err() != nil {
			q.running--
			q.mu.Unlock()
			return
		}
		j := heap.Pop(&q.pending).(queuedJob)
		q.mu.Unlock()
		j.run(ctx)
		q.mu.Lock()
		delete(q.queued, j.key)
		q.mu.Unlock()
	}
}
