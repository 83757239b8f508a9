package node

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/node/checkpoint"
	"github.com/lowband/lowband/node/store"
	"github.com/lowband/lowband/training"
)

// How the node announces its kept checkpoints in the DHT.
const (
	reprovideEvery = 6 * time.Hour    // well inside the DHT's 48-hour provider validity
	provideRetry   = 5 * time.Second  // after a failed announcement (an empty table at start)
	provideTimeout = 30 * time.Second // one announcement
	findTimeout    = 10 * time.Second // one provider lookup
)

// checkpointLimits are what this network allows a checkpoint to be: its names and θ_0's
// tensors (like).
// Only like's names and shapes are kept: the limits outlive θ_0's values, which the node
// lets go once its loop has evaluated them.
func checkpointLimits(s *configs.Spec, like []training.Tensor) checkpoint.Limits {
	shapes := make([]training.Tensor, len(like))
	for i, t := range like {
		shapes[i] = training.Tensor{Name: t.Name, Shape: slices.Clone(t.Shape)}
	}
	return checkpoint.Limits{Network: s.NetworkID(), Run: s.Run, Like: shapes}
}

// startCheckpoints sets up the node's checkpoints before its host starts: the
// checkpointer the loop hands its state to, the sync client, the metrics, and the last
// checkpoint kept from an earlier run for /status.
func (n *Node) startCheckpoints(reg prometheus.Registerer) error {
	met, err := newCkptMetrics(reg)
	if err != nil {
		return err
	}
	s, st := n.opts.Spec, n.ledger.st
	k := newCheckpointer(uint64(s.Agreement.CheckpointEvery), s.Agreement.CheckpointsKept, s.NetworkID(), s.Run, n.log)
	k.write, k.met = st.WriteCheckpoint, met
	n.announce = make(chan struct{}, 1)
	k.stored = func(*checkpoint.Manifest) { n.announceCheckpoints() }
	if info, err := st.LatestCheckpoint(); err == nil {
		k.last.Store(&CheckpointStatus{Round: info.Round, Root: hexRoot(info.Root), ID: hexRoot(info.ID), Bytes: info.Size})
	} else if !errors.Is(err, store.ErrNoCheckpoint) {
		return fmt.Errorf("reading the kept checkpoints: %w", err)
	}
	n.train.loop.ckpt = k
	w := wireOf(s)
	n.ckptSync = &ckptSyncer{
		fetch: newFetchClient(lateHost{n}, s.NetworkID(), w),
		find: func(ctx context.Context, key [32]byte) ([]peer.ID, error) {
			ctx, cancel := context.WithTimeout(ctx, findTimeout)
			defer cancel()
			return n.host.FindProviders(ctx, key, syncMaxProviders)
		},
		lim: checkpointLimits(s, n.train.initial.Params), parallel: syncParallel, timeout: syncTimeout, met: met, log: n.log,
		penalise: n.penalties.offence,
	}
	return nil
}

// LastCheckpoint is the last checkpoint this node made or kept from an earlier run (nil:
// none). Safe for concurrent use.
func (n *Node) LastCheckpoint() *CheckpointStatus {
	if n.train == nil || n.train.loop.ckpt == nil {
		return nil
	}
	return n.train.loop.ckpt.lastMade()
}

// syncCheckpoint fetches the checkpoint of want from the peers that announce it and
// verifies it against want.Root (for late joiners and nodes too far behind to repair).
func (n *Node) syncCheckpoint(ctx context.Context, want ckptWant) (*checkpoint.Checkpoint, error) {
	return n.ckptSync.sync(ctx, want)
}

// announceCheckpoints asks the provide loop to announce the kept checkpoints now.
func (n *Node) announceCheckpoints() {
	select {
	case n.announce <- struct{}{}:
	default:
	}
}

// provideLoop announces the kept checkpoints in the DHT by root (rootKey, the key a sync
// looks up): each new one once it is stored, all of them at start and every
// reprovideEvery; what failed, again soon. An announcement is a DHT lookup of the peers
// nearest the key, each answering with its own nearest, then a provider record put on
// each. In a swarm of 16 the first checkpoint's announcements, by manifest ID and by
// root, cost each node 41 KB in the round they fell in, and each later checkpoint
// announced every kept one again. The older ones were announced when they were made, a
// record lives 48 hours, and a sync looks the root up, never the manifest ID.
func (n *Node) provideLoop(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	announced := map[[32]byte]bool{} // roots announced since every kept one last was
	var all time.Time                // when all kept ones are announced again
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.announce:
		case <-t.C:
		}
		if now := time.Now(); !now.Before(all) {
			clear(announced)
			all = now.Add(reprovideEvery)
		}
		wait := time.Until(all)
		if err := n.provideKept(ctx, announced); err != nil {
			n.log.Debug("announcing checkpoints", "err", err)
			wait = provideRetry
		}
		t.Reset(wait)
	}
}

// provideKept announces every kept checkpoint whose root is not in announced, and adds
// each root it announced.
func (n *Node) provideKept(ctx context.Context, announced map[[32]byte]bool) error {
	list, err := n.ledger.st.Checkpoints()
	if err != nil {
		return err
	}
	led, self := n.ledger.state.Load(), n.host.ID().String()
	var voters []string
	for _, a := range led.Accounts {
		if led.Power(a.Peer) > 0 {
			voters = append(voters, a.Peer)
		}
	}
	pick := func(root [32]byte) bool { return led.Power(self) == 0 || announces(root, self, voters) }
	return provideNew(ctx, list, announced, pick, n.host.Provide)
}

// ckptAnnouncers is how many of a swarm's voters announce each checkpoint in the DHT
// (announces).
const ckptAnnouncers = 6

// announces reports whether the voter self, one of voters, announces the checkpoint of
// root in the DHT: the ckptAnnouncers voters of the lowest hash of the root and their ID
// do (all of a swarm of at most that many), a different few for each checkpoint, none
// able to choose (the root is not known before the round closes; nodes whose ledgers
// differ may pick a few more or fewer). A sync asks the voters whose records name the
// root before any provider the DHT lists (ckptWant.Peers): the providers are the way to
// the checkpoint when those cannot be dialed, and an announcement is a DHT lookup that
// every node of a small swarm answers. A node without voting power always announces: no
// record names it.
func announces(root [32]byte, self string, voters []string) bool {
	if len(voters) <= ckptAnnouncers {
		return true
	}
	key := func(id string) [32]byte {
		return sha256.Sum256(append(append([]byte("lowband/checkpoint-announcer/v1\x00"), root[:]...), id...))
	}
	own, below := key(self), 0
	for _, v := range voters {
		if v == self {
			continue
		}
		if k := key(v); bytes.Compare(k[:], own[:]) < 0 {
			if below++; below >= ckptAnnouncers {
				return false
			}
		}
	}
	return true
}

// provideNew announces, in order, the checkpoints of list whose root is not in announced
// and that pick takes, adding each root it announced, until one fails.
func provideNew(ctx context.Context, list []store.CheckpointInfo, announced map[[32]byte]bool, pick func([32]byte) bool, provide func(context.Context, [32]byte) error) error {
	for _, info := range list {
		if announced[info.Root] || !pick(info.Root) {
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, provideTimeout)
		err := provide(pctx, rootKey(info.Root))
		cancel()
		if err != nil {
			return fmt.Errorf("checkpoint of round %d: %w", info.Round, err)
		}
		announced[info.Root] = true
	}
	return nil
}

var _ checkpointSource = (*store.Store)(nil)
