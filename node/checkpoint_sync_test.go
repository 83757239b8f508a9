package node

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/node/checkpoint"
	"github.com/lowband/lowband/node/store"
	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/p2p/p2ptest"
	"github.com/lowband/lowband/training"
	"github.com/lowband/lowband/training/round"
)

var syncLike = []training.Tensor{{Name: "w", Shape: []int{100, 200}, Data: make([]float64, 100*200)}}

func syncLimits() checkpoint.Limits {
	return checkpoint.Limits{Network: p2ptest.Network, Run: p2ptest.Run, Like: syncLike}
}

// syncCheckpoint is a self-consistent checkpoint of round 7 whose θ depends on v.
func syncCheckpoint(t *testing.T, v float64) *checkpoint.Checkpoint {
	t.Helper()
	led, err := incentives.NewState(incentives.Params{MinStake: 100, Reward: 10, JailRounds: 3, EvidenceWindow: 4}, incentives.Genesis{})
	if err != nil {
		t.Fatal(err)
	}
	led.Round = 7
	data := make([]float64, 100*200)
	for i := range data {
		data[i] = v + float64(i)
	}
	c := &checkpoint.Checkpoint{Network: p2ptest.Network, Run: p2ptest.Run, Round: 7, Prev: [32]byte{6}, Ledger: led,
		Model: round.State{Round: 7, Params: []training.Tensor{{Name: "w", Shape: []int{100, 200}, Data: data}}}}
	root := c.Root()
	led.Head = root[:]
	return c
}

// memCheckpoints serves one checkpoint from memory (a checkpointSource); garble, if
// set, changes every chunk it sends.
type memCheckpoints struct {
	m      *checkpoint.Manifest
	chunks map[[32]byte][]byte
	garble bool
}

func newMemCheckpoints(c *checkpoint.Checkpoint) *memCheckpoints {
	m, chunks := checkpoint.Split(c, checkpoint.MinChunkSize)
	s := &memCheckpoints{m: m, chunks: map[[32]byte][]byte{}}
	for i, ch := range chunks {
		s.chunks[m.Chunks[i]] = ch
	}
	return s
}

func (s *memCheckpoints) ManifestByID(id [32]byte) []byte {
	if id != s.m.ID() {
		return nil
	}
	return s.m.Marshal()
}

func (s *memCheckpoints) ManifestByRoot(root [32]byte) []byte {
	if root != s.m.Root {
		return nil
	}
	return s.m.Marshal()
}

func (s *memCheckpoints) Chunk(h [32]byte) []byte {
	ch := s.chunks[h]
	if s.garble && ch != nil {
		ch = slices.Clone(ch)
		ch[len(ch)/2] ^= 0xff
	}
	return ch
}

// syncSwarm is a bootstrap host, servers and a client (the last host), all in each
// other's DHT tables.
type syncSwarm struct {
	s       *p2ptest.Swarm
	servers []*p2p.Host
	client  *p2p.Host
}

func newSyncSwarm(t *testing.T, ctx context.Context, servers int) *syncSwarm {
	t.Helper()
	s, err := p2ptest.Start(ctx, servers+1, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := p2ptest.Poll(ctx, "full routing tables", 50*time.Millisecond, func() bool { return p2ptest.InTables(s.All()) }); err != nil {
		t.Fatal(err)
	}
	return &syncSwarm{s: s, servers: s.Hosts[:servers], client: s.Hosts[servers]}
}

// serve has server i answer the fetch protocol from src (or with handle, if not nil) and
// announce src's checkpoint in the DHT by root, as a node does.
func (w *syncSwarm) serve(t *testing.T, ctx context.Context, i int, src checkpointSource, m *checkpoint.Manifest, handle p2p.Handler) {
	t.Helper()
	h := w.servers[i]
	if handle == nil {
		handle = (&fetchServer{ckpts: src}).handle
	}
	h.Handle(string(p2p.FetchProtocol(p2ptest.Network)), maxFetchRequest, handle)
	if err := h.Provide(ctx, rootKey(m.Root)); err != nil {
		t.Fatal(err)
	}
}

// syncer is the client's syncer; first, if set, is asked before the other providers.
func (w *syncSwarm) syncer(met *ckptMetrics, first *p2p.Host) *ckptSyncer {
	return &ckptSyncer{
		fetch: &fetchClient{host: w.client, proto: string(p2p.FetchProtocol(p2ptest.Network)), timeout: defaultFetchTimeout},
		find: func(ctx context.Context, key [32]byte) ([]peer.ID, error) {
			ps, err := w.client.FindProviders(ctx, key, syncMaxProviders)
			if first != nil {
				slices.SortStableFunc(ps, func(a, b peer.ID) int { return boolInt(b == first.ID()) - boolInt(a == first.ID()) })
			}
			return ps, err
		},
		lim: syncLimits(), parallel: syncParallel, timeout: 500 * time.Millisecond, met: met, log: slog.New(slog.DiscardHandler),
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func testCkptMetrics(t *testing.T) (*ckptMetrics, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := newCkptMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	return m, reg
}

const (
	metricSyncs   = "lowband_node_checkpoint_syncs_total"
	metricDropped = "lowband_node_checkpoint_peers_dropped_total"
	metricBytes   = "lowband_node_checkpoint_fetched_bytes_total"
)

// A client syncs a checkpoint from two honest servers (one serving from memory, one from
// its store), by root and by manifest ID, over real hosts: the providers come from the
// DHT, the chunks from both, and the result is the checkpoint of that root.
func TestCheckpointSyncFromHonestPeers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	w := newSyncSwarm(t, ctx, 2)
	c := syncCheckpoint(t, 1)
	src := newMemCheckpoints(c)
	w.serve(t, ctx, 0, src, src.m, nil)
	st, err := store.Open(filepath.Join(t.TempDir(), "ledger.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m, chunks := checkpoint.Split(c, checkpoint.MinChunkSize)
	if err := st.PutCheckpoint(m, chunks, nil, 3); err != nil {
		t.Fatal(err)
	}
	w.serve(t, ctx, 1, st, m, nil)
	met, reg := testCkptMetrics(t)
	for _, want := range []ckptWant{{Root: c.Root()}, {Root: c.Root(), ID: src.m.ID()}} {
		got, err := w.syncer(met, nil).sync(ctx, want)
		if err != nil {
			t.Fatal(err)
		}
		if got.Root() != c.Root() || string(got.Encode()) != string(c.Encode()) {
			t.Fatal("synced another checkpoint")
		}
	}
	if n := gathered(t, reg, metricSyncs, "ok"); n != 2 {
		t.Fatalf("%v syncs counted ok, want 2", n)
	}
	if n := gathered(t, reg, metricBytes, ""); n < float64(2*src.m.Size) {
		t.Fatalf("%v bytes counted, want at least %d", n, 2*src.m.Size)
	}
}

// A server that sends chunks that are not the manifest's is dropped, counted and scored
// down in gossip, and the client gets every chunk from the honest one.
func TestCheckpointSyncGarbageChunksRefusedHonestPeerServes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	w := newSyncSwarm(t, ctx, 2)
	c := syncCheckpoint(t, 1)
	liar := newMemCheckpoints(c)
	liar.garble = true
	w.serve(t, ctx, 0, liar, liar.m, nil)
	honest := newMemCheckpoints(c)
	w.serve(t, ctx, 1, honest, honest.m, nil)
	met, reg := testCkptMetrics(t)
	pen := newPenalties(time.Now)
	sy := w.syncer(met, w.servers[0])
	sy.penalise = pen.offence
	got, err := sy.sync(ctx, ckptWant{Root: c.Root()})
	if err != nil {
		t.Fatal(err)
	}
	if got.Root() != c.Root() {
		t.Fatal("synced another checkpoint")
	}
	if pen.score(w.servers[0].ID()) >= 0 || pen.score(w.servers[1].ID()) != 0 {
		t.Fatalf("gossip penalties: liar %v, honest %v", pen.score(w.servers[0].ID()), pen.score(w.servers[1].ID()))
	}
	if n := gathered(t, reg, metricDropped, dropGarbage); n != 1 {
		t.Fatalf("%v peers dropped for garbage, want 1", n)
	}
}

// A server whose manifest claims the root but whose bytes are another state (its chunks
// agree with its manifest) is refused at assembly, dropped, and the client takes the
// honest server's manifest and chunks.
func TestCheckpointSyncLyingManifestRefusedHonestPeerServes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	w := newSyncSwarm(t, ctx, 2)
	c := syncCheckpoint(t, 1)
	bad := syncCheckpoint(t, 2)
	liar := newMemCheckpoints(bad)
	liar.m.Root = c.Root()
	w.serve(t, ctx, 0, liar, liar.m, nil)
	honest := newMemCheckpoints(c)
	w.serve(t, ctx, 1, honest, honest.m, nil)
	met, reg := testCkptMetrics(t)
	got, err := w.syncer(met, w.servers[0]).sync(ctx, ckptWant{Root: c.Root()})
	if err != nil {
		t.Fatal(err)
	}
	if got.Root() != c.Root() || got.Model.Params[0].Data[0] != 1 {
		t.Fatal("synced the liar's checkpoint")
	}
	if n := gathered(t, reg, metricDropped, dropGarbage); n != 1 {
		t.Fatalf("%v peers dropped for garbage, want 1", n)
	}
}

// A server that never answers does not hang the client: it is dropped after the request
// timeout and the honest one serves; with only stalling servers the sync fails in bounded
// time.
func TestCheckpointSyncStallingPeerDoesNotHang(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	w := newSyncSwarm(t, ctx, 2)
	c := syncCheckpoint(t, 1)
	src := newMemCheckpoints(c)
	stall := func(ctx context.Context, _ peer.ID, _ []byte) ([]byte, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	w.serve(t, ctx, 0, src, src.m, stall)
	w.serve(t, ctx, 1, src, src.m, nil)
	met, reg := testCkptMetrics(t)
	pen := newPenalties(time.Now)
	sy := w.syncer(met, w.servers[0])
	sy.penalise = pen.offence
	got, err := sy.sync(ctx, ckptWant{Root: c.Root()})
	if err != nil || got.Root() != c.Root() {
		t.Fatalf("with one stalling server: %v", err)
	}
	if pen.score(w.servers[0].ID()) != 0 {
		t.Fatal("a stalling server was penalised: a slow link proves nothing")
	}
	if n := gathered(t, reg, metricDropped, dropStalled); n != 1 {
		t.Fatalf("%v peers dropped as stalled, want 1", n)
	}
	w.servers[1].Handle(string(p2p.FetchProtocol(p2ptest.Network)), maxFetchRequest, stall)
	t0 := time.Now()
	_, err = w.syncer(met, nil).sync(ctx, ckptWant{Root: c.Root()})
	if !errors.Is(err, errNoProviders) {
		t.Fatalf("with only stalling servers: %v, want errNoProviders", err)
	}
	if d := time.Since(t0); d > 10*time.Second {
		t.Fatalf("the sync took %v with a request timeout of 500ms", d)
	}
}
