package node

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/node/checkpoint"
	"github.com/lowband/lowband/p2p"
)

// Why a peer is dropped from a checkpoint sync (the reason label of
// lowband_node_checkpoint_peers_dropped_total).
const (
	dropStalled = "stalled" // no answer within the request timeout, or the stream broke
	dropGarbage = "garbage" // bytes that are not what was asked for
	dropMissing = "missing" // answered that it does not hold it
)

// Defaults of a checkpoint sync.
const (
	syncParallel     = 4                // chunk requests in flight
	syncTimeout      = 10 * time.Second // one request
	syncMaxProviders = 20               // providers asked of the DHT
)

// errNoProviders: no peer is left that serves the checkpoint.
var errNoProviders = errors.New("no peer left that serves the checkpoint")

// ckptWant names the checkpoint a sync fetches.
type ckptWant struct {
	Root [32]byte // the state root it must have: the NewRoot of record Round-1
	ID   [32]byte // its manifest's ID when known; zero: any manifest of Root
	// Peers are asked first, before the providers the DHT names: peers whose records
	// say they hold the state of Root (they made its checkpoint, if they keep it).
	Peers []peer.ID
}

// rootKey is the DHT key under which a node announces the checkpoint of a state root.
func rootKey(root [32]byte) [32]byte {
	return sha256.Sum256(append([]byte("lowband/checkpoint-root/v1\x00"), root[:]...))
}

// ckptSyncer fetches a checkpoint from the peers that announce it and verifies it. A peer
// that stalls, answers garbage or does not hold what it announced is dropped for the rest
// of the sync, counted and logged. Safe for concurrent use.
type ckptSyncer struct {
	fetch    *fetchClient
	find     func(ctx context.Context, key [32]byte) ([]peer.ID, error) // providers of a key
	lim      checkpoint.Limits
	parallel int
	timeout  time.Duration // one request
	met      *ckptMetrics  // nil: not counted
	log      *slog.Logger
	// penalise, if set, is told of each peer dropped for garbage: bytes that are provably
	// not what it announced (it lowers the peer's gossip score).
	penalise func(peer.ID)
}

// sync finds the providers of want, fetches a manifest of want.Root from one of them and
// the chunks from all of them, and returns the checkpoint once it assembles to want.Root.
// A manifest whose chunks assemble to something else costs its sender its place, and the
// next provider's manifest is tried.
func (s *ckptSyncer) sync(ctx context.Context, want ckptWant) (*checkpoint.Checkpoint, error) {
	found, err := s.find(ctx, rootKey(want.Root)) // nodes announce their checkpoints by root
	if err != nil && len(want.Peers) == 0 {
		return nil, s.failed(want, fmt.Errorf("finding providers: %w", err))
	}
	live := slices.Clone(want.Peers)
	for _, p := range found {
		if !slices.Contains(live, p) {
			live = append(live, p)
		}
	}
	ps := &peerSet{live: live}
	for {
		from, m, err := s.manifest(ctx, want, ps)
		if err != nil {
			return nil, s.failed(want, err)
		}
		chunks, err := s.chunks(ctx, m, ps)
		if err != nil {
			return nil, s.failed(want, err)
		}
		c, err := checkpoint.Assemble(m, chunks, want.Root, s.lim)
		if err == nil {
			s.log.Info("checkpoint synced", "round", c.Round, "root", hexRoot(want.Root), "bytes", m.Size, "chunks", len(m.Chunks), "peers", len(ps.list()))
			s.met.synced("ok")
			return c, nil
		}
		s.drop(ps, from, dropGarbage, err) // its chunks matched its manifest: the manifest lied
		ps.restoreMissing()                // peers that lacked the liar's chunks may hold the next manifest's
	}
}

func (s *ckptSyncer) failed(want ckptWant, err error) error {
	s.log.Warn("checkpoint sync failed", "root", hexRoot(want.Root), "err", err)
	s.met.synced("failed")
	return fmt.Errorf("syncing the checkpoint of root %x: %w", want.Root[:8], err)
}

// manifest asks the live peers in turn for a manifest of want until one sends a manifest
// of this network that names want (its ID or its root).
func (s *ckptSyncer) manifest(ctx context.Context, want ckptWant, ps *peerSet) (peer.ID, *checkpoint.Manifest, error) {
	req := fetchRequest{kind: fetchManifest, hash: want.ID}
	if want.ID == ([32]byte{}) {
		req = fetchRequest{kind: fetchManifestR, hash: want.Root}
	}
	for _, p := range ps.list() {
		data, err := s.request(ctx, p, req)
		if err != nil {
			s.dropFor(ps, p, err)
			continue
		}
		m, err := checkpoint.DecodeManifest(data, s.lim)
		if err == nil && m.Root != want.Root {
			err = fmt.Errorf("manifest of root %x", m.Root[:8])
		} else if err == nil && want.ID != ([32]byte{}) && m.ID() != want.ID {
			err = fmt.Errorf("manifest %x, asked for %x", m.ID(), want.ID[:8])
		}
		if err != nil {
			s.drop(ps, p, dropGarbage, err)
			continue
		}
		return p, m, nil
	}
	if err := ctx.Err(); err != nil {
		return "", nil, err
	}
	return "", nil, errNoProviders
}

// request asks p for r within the sync's request timeout and counts the bytes.
func (s *ckptSyncer) request(ctx context.Context, p peer.ID, r fetchRequest) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	data, err := s.fetch.fetch(ctx, p, r)
	s.met.fetched(len(data))
	return data, err
}

// dropFor drops p for a failed request: missing when it said it holds none, garbage when
// it sent more than any such object, stalled otherwise. Nothing is dropped once ctx ended.
func (s *ckptSyncer) dropFor(ps *peerSet, p peer.ID, err error) {
	switch {
	case errors.Is(err, context.Canceled):
		return
	case errors.Is(err, errNotHeld):
		s.drop(ps, p, dropMissing, err)
	case errors.Is(err, p2p.ErrResponseTooLarge):
		s.drop(ps, p, dropGarbage, err)
	default:
		s.drop(ps, p, dropStalled, err)
	}
}

// drop takes p out of the sync, once, counting and logging why.
func (s *ckptSyncer) drop(ps *peerSet, p peer.ID, reason string, err error) {
	if !ps.remove(p, reason == dropMissing) {
		return
	}
	s.met.droppedPeer(reason)
	if reason == dropGarbage && s.penalise != nil {
		s.penalise(p)
	}
	s.log.Warn("checkpoint sync: peer dropped", "peer", p.ShortString(), "reason", reason, "err", err)
}

// peerSet is the peers a sync still asks, in turn. Safe for concurrent use.
type peerSet struct {
	mu      sync.Mutex
	live    []peer.ID
	next    int
	missing []peer.ID // removed for not holding what was asked for: restoreMissing
}

// pick returns the next live peer in turn; false when none is left.
func (ps *peerSet) pick() (peer.ID, bool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if len(ps.live) == 0 {
		return "", false
	}
	p := ps.live[ps.next%len(ps.live)]
	ps.next++
	return p, true
}

// remove takes p out; false when it was out already. A peer removed as missing comes
// back with restoreMissing.
func (ps *peerSet) remove(p peer.ID, missing bool) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	i := slices.Index(ps.live, p)
	if i < 0 {
		return false
	}
	ps.live = slices.Delete(ps.live, i, i+1)
	if missing {
		ps.missing = append(ps.missing, p)
	}
	return true
}

// restoreMissing brings back the peers removed as missing: they lacked what one manifest
// named, and may hold what another names.
func (ps *peerSet) restoreMissing() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.live = append(ps.live, ps.missing...)
	ps.missing = nil
}

func (ps *peerSet) list() []peer.ID {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return slices.Clone(ps.live)
}
