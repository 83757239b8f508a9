package store

import (
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/lowband/lowband/node/checkpoint"
	"github.com/lowband/lowband/training"
	"github.com/lowband/lowband/training/round"
)

const ckptNetwork, ckptRun = "net", "run"

var ckptLike = []training.Tensor{{Name: "w", Shape: []int{40, 200}, Data: make([]float64, 40*200)}}

func ckptLimits() checkpoint.Limits {
	return checkpoint.Limits{Network: ckptNetwork, Run: ckptRun, Like: ckptLike}
}

// testCheckpoint is a self-consistent checkpoint of round r: θ's values depend on r from
// index from on, so checkpoints of different rounds (below 24, whose encodings are as
// long) share the chunks before.
func testCheckpoint(t *testing.T, r uint64, from int) *checkpoint.Checkpoint {
	t.Helper()
	led := *testGenesis(t)
	led.Round = r
	data := make([]float64, 40*200)
	for i := from; i < len(data); i++ {
		data[i] = float64(r) + float64(i)/1000
	}
	c := &checkpoint.Checkpoint{Network: ckptNetwork, Run: ckptRun, Round: r, Prev: [32]byte{byte(r)},
		Model: roundState(r, data), Ledger: &led}
	root := c.Root()
	led.Head = root[:]
	return c
}

func openCkptStore(t *testing.T) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

func putCkpt(t *testing.T, s *Store, c *checkpoint.Checkpoint, local []byte, keep int) *checkpoint.Manifest {
	t.Helper()
	m, chunks := checkpoint.Split(c, checkpoint.MinChunkSize)
	if err := s.PutCheckpoint(m, chunks, local, keep); err != nil {
		t.Fatal(err)
	}
	return m
}

// The store keeps the last N checkpoints: putting a fourth with keep 3 drops the first,
// its indexes and the chunks only it used, in the same transaction; chunks a kept one
// shares stay. Each kept one loads back as put, with its local state.
func TestCheckpointsKeepTheLastN(t *testing.T) {
	s, _ := openCkptStore(t)
	var ms []*checkpoint.Manifest
	for r := uint64(1); r <= 4; r++ {
		ms = append(ms, putCkpt(t, s, testCheckpoint(t, r, 4096), []byte{byte(r)}, 3))
	}
	list, err := s.Checkpoints()
	if err != nil {
		t.Fatal(err)
	}
	var rounds []uint64
	for _, info := range list {
		rounds = append(rounds, info.Round)
	}
	if !slices.Equal(rounds, []uint64{2, 3, 4}) {
		t.Fatalf("kept rounds %v, want 2 3 4", rounds)
	}
	if _, err := s.CheckpointAt(1); !errors.Is(err, ErrNoCheckpoint) {
		t.Fatalf("round 1: %v, want ErrNoCheckpoint", err)
	}
	old := ms[0]
	if s.ManifestByID(old.ID()) != nil || s.ManifestByRoot(old.Root) != nil || s.Chunk(old.Chunks[len(old.Chunks)-1]) != nil {
		t.Fatal("the dropped checkpoint's manifest or own chunk is still served")
	}
	if s.Chunk(old.Chunks[1]) == nil || old.Chunks[1] != ms[3].Chunks[1] {
		t.Fatal("a chunk the kept checkpoints share was dropped")
	}
	latest, err := s.LatestCheckpoint()
	if err != nil || latest.Round != 4 || latest.ID != ms[3].ID() {
		t.Fatalf("latest: round %d, %v", latest.Round, err)
	}
	for i, m := range ms[1:] {
		c, local, err := s.LoadCheckpoint(m.Round, ckptLimits())
		if err != nil {
			t.Fatal(err)
		}
		if c.Root() != m.Root || !slices.Equal(local, []byte{byte(m.Round)}) || string(s.ManifestByID(m.ID())) != string(m.Marshal()) {
			t.Fatalf("checkpoint %d did not load back as put", i+1)
		}
	}
}

// A checkpoint of a round already kept replaces it; an empty local state is kept empty;
// the checkpoints are there after the store is reopened.
func TestCheckpointReplacedAndReopened(t *testing.T) {
	s, path := openCkptStore(t)
	putCkpt(t, s, testCheckpoint(t, 10, 0), []byte("a"), 3)
	c := testCheckpoint(t, 10, 0)
	c.Model.Params[0].Data[0] = 42
	root := c.Root()
	c.Ledger.Head = root[:]
	m := putCkpt(t, s, c, nil, 3)
	s.Close()
	s, err := Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	list, err := s.Checkpoints()
	if err != nil || len(list) != 1 || list[0].ID != m.ID() {
		t.Fatalf("after replacing: %d kept, %v", len(list), err)
	}
	if _, local, err := s.LoadCheckpoint(10, ckptLimits()); err != nil || len(local) != 0 {
		t.Fatalf("local %q, %v", local, err)
	}
}

// Chunks that do not match the manifest are not stored.
func TestPutCheckpointRefusesChunksNotOfItsManifest(t *testing.T) {
	s, _ := openCkptStore(t)
	m, chunks := checkpoint.Split(testCheckpoint(t, 10, 0), checkpoint.MinChunkSize)
	bad := slices.Clone(chunks)
	bad[0] = append([]byte{1}, chunks[0][1:]...)
	if err := s.PutCheckpoint(m, bad, nil, 3); !errors.Is(err, checkpoint.ErrChunk) {
		t.Fatalf("%v, want ErrChunk", err)
	}
	if _, err := s.LatestCheckpoint(); !errors.Is(err, ErrNoCheckpoint) {
		t.Fatalf("latest after a refused put: %v", err)
	}
}

func roundState(r uint64, data []float64) round.State {
	return round.State{Round: r, Params: []training.Tensor{{Name: "w", Shape: []int{40, 200}, Data: data}}}
}

// After a repair from round 2, the checkpoints of rounds 3 and 4 (which follow from the
// rounds closed again) are dropped with the chunks only they used; those up to round 2 stay.
func TestDropCheckpointsAfterARepair(t *testing.T) {
	s, _ := openCkptStore(t)
	var ms []*checkpoint.Manifest
	for r := uint64(1); r <= 4; r++ {
		ms = append(ms, putCkpt(t, s, testCheckpoint(t, r, 4096), nil, 10))
	}
	if err := s.DropCheckpointsAfter(2); err != nil {
		t.Fatal(err)
	}
	list, err := s.Checkpoints()
	if err != nil || len(list) != 2 || list[0].Round != 1 || list[1].Round != 2 {
		t.Fatalf("kept %d checkpoints after the drop, %v", len(list), err)
	}
	for _, m := range ms[2:] {
		if s.ManifestByID(m.ID()) != nil || s.ManifestByRoot(m.Root) != nil || s.Chunk(m.Chunks[len(m.Chunks)-1]) != nil {
			t.Fatalf("the checkpoint of round %d is still served", m.Round)
		}
	}
	if _, _, err := s.LoadCheckpoint(2, ckptLimits()); err != nil {
		t.Fatalf("round 2 after the drop: %v", err)
	}
}
