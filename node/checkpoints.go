package node

import (
	"context"
	"log/slog"
	"sync/atomic"

	"github.com/lowband/lowband/node/checkpoint"
	"github.com/lowband/lowband/node/core"
)

// CheckpointStatus is the node's last checkpoint, for /status.
type CheckpointStatus struct {
	Round uint64 `json:"round"` // first open round: the state after closing Round-1
	Root  string `json:"root"`  // the state root it verifies against (hex)
	ID    string `json:"id"`    // its manifest's ID (hex)
	Bytes uint64 `json:"bytes"` // size of its encoding
}

// checkpointer makes the node's checkpoints: the loop hands it a copy of the state after
// a commit whose next round is a multiple of every, and it encodes and stores the
// checkpoint off the loop, keeping the last keep. One checkpoint is made at a time; one
// handed over meanwhile waits, replacing any older one waiting.
type checkpointer struct {
	every          uint64
	keep           int
	network, runID string
	// write stores a checkpoint with the node's local state and returns its manifest
	// (store.WriteCheckpoint: encoded straight into its file).
	write func(c *checkpoint.Checkpoint, local []byte, keep int) (*checkpoint.Manifest, error)
	// stored, if set, is told each checkpoint stored (to announce it); it must not block.
	stored func(m *checkpoint.Manifest)
	// local, if set, returns the node's local state that goes with a checkpoint; the loop
	// calls it with the copy of the state, so the two are of the same moment.
	local func() []byte
	met   *ckptMetrics
	log   *slog.Logger

	jobs chan ckptJob
	last atomic.Pointer[CheckpointStatus]
}

type ckptJob struct {
	c     *checkpoint.Checkpoint
	want  [32]byte // the NewRoot of the record committed before it
	local []byte
}

func newCheckpointer(every uint64, keep int, network, run string, log *slog.Logger) *checkpointer {
	return &checkpointer{every: every, keep: keep, network: network, runID: run, log: log, jobs: make(chan ckptJob, 1)}
}

// due reports whether closing round r calls for a checkpoint: r+1 is a multiple of every.
func (k *checkpointer) due(r uint64) bool { return k.every > 0 && (r+1)%k.every == 0 }

// take hands a checkpoint over without blocking, replacing one still waiting. Called by
// the loop only.
func (k *checkpointer) take(c *checkpoint.Checkpoint, want [32]byte, local []byte) {
	c.Network, c.Run = k.network, k.runID
	job := ckptJob{c: c, want: want, local: local}
	for {
		select {
		case k.jobs <- job:
			return
		default:
		}
		select {
		case old := <-k.jobs:
			k.log.Warn("checkpoint skipped: the next was due before it was made", "round", old.c.Round)
		default:
		}
	}
}

// run makes the checkpoints handed over until ctx ends.
func (k *checkpointer) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case job := <-k.jobs:
			k.make(ctx, job)
		}
	}
}

// make encodes and stores one checkpoint, and logs it. One whose root is not the
// committed record's is not stored: it would be refused by everyone who fetched it.
func (k *checkpointer) make(ctx context.Context, job ckptJob) {
	if root := job.c.Root(); root != job.want {
		k.log.Error("no checkpoint: its root is not the committed one", "round", job.c.Round, "root", hexRoot(root), "committed", hexRoot(job.want))
		return
	}
	m, err := k.write(job.c, job.local, k.keep)
	if err != nil {
		if ctx.Err() == nil {
			k.log.Error("storing the checkpoint", "round", job.c.Round, "err", err)
		}
		return
	}
	id := m.ID()
	st := &CheckpointStatus{Round: m.Round, Root: hexRoot(m.Root), ID: hexRoot(id), Bytes: m.Size}
	k.last.Store(st)
	k.met.madeOne()
	k.log.Info("checkpoint made", "round", st.Round, "root", st.Root, "id", st.ID, "bytes", st.Bytes, "chunks", len(m.Chunks))
	if k.stored != nil {
		k.stored(m)
	}
}

// lastMade is the last checkpoint stored (nil: none yet). Safe for concurrent use.
func (k *checkpointer) lastMade() *CheckpointStatus { return k.last.Load() }

// checkpoint hands the checkpointer a copy of the state after commit c when c's round
// calls for one. Called by the loop right after the commit, before any other event
// changes the core.
func (l *loop) checkpoint(c *core.Commit) {
	if l.ckpt == nil || c == nil || !l.ckpt.due(c.Record.Round) {
		return
	}
	model := l.core.Model()
	if model.Round != c.Record.Round+1 || c.State.Round != model.Round || len(c.Record.PrevRoot) != 32 || len(c.Record.NewRoot) != 32 {
		l.log.Warn("no checkpoint: the core's state is not the one committed", "round", c.Record.Round, "model_round", model.Round)
		return
	}
	var local []byte
	if l.ckpt.local != nil {
		local = l.ckpt.local()
	}
	l.ckpt.take(&checkpoint.Checkpoint{Round: model.Round, Prev: [32]byte(c.Record.PrevRoot), Model: model, Ledger: c.State},
		[32]byte(c.Record.NewRoot), local)
}
