package node

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/incentives/incentivestest"
	"github.com/lowband/lowband/node/core"
	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/training"
	"github.com/lowband/lowband/training/compress"
	"github.com/lowband/lowband/training/round"
	"github.com/lowband/lowband/verify"
)

// dueModel is a model of one low-rank matrix and two biases of n values, the biases sent
// every third round in rotation: in round 12 b1 is due and b2 not, in round 10 neither,
// in round 11 b2 alone. It returns its schedule check and a pseudo-gradient.
func dueModel(n int) (*dueCheck, []compress.Tensor) {
	cfg := compress.Config{RankMin: 1, RankMax: 2, MinLowRank: 16, DenseEvery: 3, MaxShardBytes: compress.MinShardBytes, Seed: 1}
	rng := rand.New(rand.NewPCG(1, 2))
	ts := []compress.Tensor{{Name: "w", Shape: []int{24, 16}}, {Name: "b1", Shape: []int{n}}, {Name: "b2", Shape: []int{n}}}
	d := &dueCheck{cfg: cfg, lim: compress.DefaultLimits}
	for i := range ts {
		size := 1
		for _, s := range ts[i].Shape {
			size *= s
		}
		ts[i].Data = make([]float64, size)
		for j := range ts[i].Data {
			ts[i].Data[j] = 0.01 * rng.NormFloat64()
		}
		d.like = append(d.like, compress.Tensor{Name: ts[i].Name, Shape: ts[i].Shape})
		d.shapes = append(d.shapes, ts[i].Shape)
	}
	return d, ts
}

// encodeFor is a contribution encoded with cfg for round r, as shards.
func encodeFor(t *testing.T, cfg compress.Config, r uint64, ts []compress.Tensor) []compress.Shard {
	t.Helper()
	enc, err := compress.NewEncoder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m, err := enc.EncodeRound(r, ts)
	if err != nil {
		t.Fatal(err)
	}
	shards, err := m.Shards()
	if err != nil {
		t.Fatal(err)
	}
	return shards
}

// partOf is shard index of count of peer's contribution to round r, signed under bundle.
func partOf(t *testing.T, fx *incentivestest.Fixture, peer string, bundle []byte, r uint64, index, count int, payload []byte) []byte {
	t.Helper()
	b, err := verify.UnmarshalBundle(bundle)
	if err != nil {
		t.Fatal(err)
	}
	bh := b.Hash()
	h := verify.ShardHeader{Network: fx.Network, Run: fx.Run, Round: r, Peer: b.PeerID, Index: uint32(index), Count: uint32(count), BundleHash: bh[:]}
	s, err := verify.SignShard(fx.Key(peer), h, payload)
	if err != nil {
		t.Fatal(err)
	}
	return marshalShard(t, s)
}

// TestShardsOffTheScheduleRefusedAtValidation: under compression.dense_every, a shard that
// carries a tensor not due in its round, and a whole contribution that leaves out a due
// one, are refused at validation ("due", as the close would refuse them; no evidence), and
// nothing of them reaches the loop; honest shards of the round pass, whole or one of
// several (which may lack a due tensor another carries).
func TestShardsOffTheScheduleRefusedAtValidation(t *testing.T) {
	d, ts := dueModel(16)
	ft := newFullTest(t, 16, func(c *fullConfig) { c.Due = d })
	fx := ft.fx
	alice := fx.Bundle("alice", "")
	ft.holdBundle(alice)
	all := d.cfg
	all.DenseEvery = 0 // every tensor, every round
	for _, c := range []struct {
		name   string
		round  uint64
		shards []compress.Shard
		want   p2p.Result
		reason string
	}{
		{"honest, round 12 (w, b1)", 12, encodeFor(t, d.cfg, 12, ts), p2p.Accept, reasonOK},
		{"honest, round 11 (w, b2)", 11, encodeFor(t, d.cfg, 11, ts), p2p.Accept, reasonOK},
		{"every tensor in round 12: b2 is not due", 12, encodeFor(t, all, 12, ts), p2p.Reject, reasonDue},
		{"round 10's tensors (w) in round 12: b1 is missing", 12, encodeFor(t, d.cfg, 10, ts), p2p.Reject, reasonDue},
		{"round 11's tensors (w, b2) in round 12", 12, encodeFor(t, d.cfg, 11, ts), p2p.Reject, reasonDue},
	} {
		if len(c.shards) != 1 {
			t.Fatalf("%s: %d shards, want one", c.name, len(c.shards))
		}
		ft.expect(c.name, p2p.KindShards, partOf(t, fx, "alice", alice, c.round, 0, 1, c.shards[0].Data), c.want, c.reason)
		if c.want == p2p.Accept {
			<-ft.inbox
		}
		ft.inboxEmpty(c.name)
	}

	// Biases of 6,000 values take more than a shard each.
	d, ts = dueModel(6000)
	ft.f.cfg.Due = d
	all = d.cfg
	all.DenseEvery = 0
	honest, every := encodeFor(t, d.cfg, 12, ts), encodeFor(t, all, 12, ts)
	if len(honest) < 2 || len(every) <= len(honest) {
		t.Fatalf("%d and %d shards: the test needs contributions of several", len(honest), len(every))
	}
	carol := fx.Bundle("carol", "") // alice holds round 12's slot 0 already: another shard would be equivocation
	ft.holdBundle(carol)
	for i, sh := range honest {
		ft.expect("honest part", p2p.KindShards, partOf(t, fx, "carol", carol, 12, i, len(honest), sh.Data), p2p.Accept, reasonOK)
		<-ft.inbox
	}
	bob := fx.Bundle("bob", "")
	ft.holdBundle(bob)
	refused := 0
	for i, sh := range every {
		data := partOf(t, fx, "bob", bob, 12, i, len(every), sh.Data)
		if ft.validate(p2p.KindShards, data) == p2p.Reject {
			refused++
			continue
		}
		<-ft.inbox
	}
	if refused == 0 || refused == len(every) {
		t.Fatalf("%d of the %d parts of a contribution carrying b2 in round 12 refused: want those with b2", refused, len(every))
	}
	if n := ft.count(p2p.KindShards, p2p.Reject, reasonDue); n != 3+float64(refused) {
		t.Fatalf("%v shards refused as off the schedule, want %d", n, 3+refused)
	}
	ft.inboxEmpty("off the schedule")
	if len(ft.published) != 0 {
		t.Fatal("a shard off the schedule was made evidence")
	}
}

// The schedule check the node builds from a spec (fmnist: dense_every 8) passes every
// shard the node's own round machine sends for a round, and refuses some of them as
// shards of the next round: it knows the same tensors, order and schedule as the encoder
// and the close.
func TestDueCheckOfTheSpecPassesTheNodesOwnShards(t *testing.T) {
	s := syntheticSpec(t, nil)
	s.Training = configs.DefaultTrainingSpecFor(configs.TaskFMNIST)
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	p, err := NewParams(s)
	if err != nil {
		t.Fatal(err)
	}
	if p.Training.Compression.DenseEvery < 2 {
		t.Fatalf("dense_every %d: the test needs a schedule", p.Training.Compression.DenseEvery)
	}
	d, err := newDueCheck(p)
	if err != nil {
		t.Fatal(err)
	}
	init, err := p.Initial()
	if err != nil {
		t.Fatal(err)
	}
	m, err := round.New(p.RoundConfig(testPeerID(t), 1), init)
	if err != nil {
		t.Fatal(err)
	}
	st, err := m.Start()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	wrong := 0
	for r := uint64(0); r < 2; r++ {
		local := make([]training.Tensor, len(st.Params))
		for i, x := range st.Params {
			local[i] = training.Tensor{Name: x.Name, Shape: x.Shape, Data: make([]float64, len(x.Data))}
			for j, v := range x.Data {
				local[i].Data[j] = v + 0.01*rng.NormFloat64()
			}
		}
		rd, err := m.LocalDone(r, local)
		if err != nil {
			t.Fatal(err)
		}
		for _, sh := range rd.Send.Shards {
			if err := d.check(r, uint32(sh.Count), sh.Data); err != nil {
				t.Fatalf("round %d: the node's own shard %d of %d refused: %v", r, sh.Index, sh.Count, err)
			}
			if d.check(r+1, uint32(sh.Count), sh.Data) != nil {
				wrong++
			}
		}
		if next, ok := m.Closable(); rd.Start == nil && ok {
			if rd, err = m.Close(next); err != nil {
				t.Fatal(err)
			}
		}
		st = *rd.Start
	}
	if wrong == 0 {
		t.Fatal("no shard refused as one of the next round: the schedule is not checked")
	}
}

// BenchmarkDueCheckCharLM times the schedule check and the content check of the shards of
// one contribution to the default network (charlm, dense_every 8), per contribution.
func BenchmarkDueCheckCharLM(b *testing.B) {
	s, err := configs.ParseSpec("devnet", configs.DevnetSpec)
	if err != nil {
		b.Fatal(err)
	}
	s.Training = configs.DefaultTrainingSpecFor(configs.TaskCharLM)
	s.Incentives.Stakes = nil
	if err := s.Validate(); err != nil {
		b.Fatal(err)
	}
	p, err := NewParams(s)
	if err != nil {
		b.Fatal(err)
	}
	d, err := newDueCheck(p)
	if err != nil {
		b.Fatal(err)
	}
	init, err := p.Initial()
	if err != nil {
		b.Fatal(err)
	}
	m, err := round.New(p.RoundConfig("bench", 1), init)
	if err != nil {
		b.Fatal(err)
	}
	st, err := m.Start()
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	local := make([]training.Tensor, len(st.Params))
	for i, x := range st.Params {
		local[i] = training.Tensor{Name: x.Name, Shape: x.Shape, Data: make([]float64, len(x.Data))}
		for j, v := range x.Data {
			local[i].Data[j] = v + 0.001*rng.NormFloat64()
		}
	}
	rd, err := m.LocalDone(0, local)
	if err != nil {
		b.Fatal(err)
	}
	shards := rd.Send.Shards
	b.Run("due", func(b *testing.B) {
		for b.Loop() {
			for _, sh := range shards {
				if err := d.check(0, uint32(sh.Count), sh.Data); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("content", func(b *testing.B) {
		for b.Loop() {
			for _, sh := range shards {
				if err := p.CheckContent(sh.Data); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Logf("%d shards, %d bytes", len(shards), len(shards[0].Data))
}

// TestRepairFetchRefusesAShardOffTheSchedule: a shard fetched by CID for a repair passes
// the same schedule check as one by gossip: one that carries a tensor not due in its round
// is refused ("due") and never reaches the loop or the content store; an honest one of
// the same round is taken.
func TestRepairFetchRefusesAShardOffTheSchedule(t *testing.T) {
	d, ts := dueModel(16)
	all := d.cfg
	all.DenseEvery = 0 // every tensor, every round
	fx := incentivestest.New("net-a", "run-a")
	alice := fx.Bundle("alice", "")
	off := partOf(t, fx, "alice", alice, 12, 0, 1, encodeFor(t, all, 12, ts)[0].Data)
	honest := partOf(t, fx, "alice", alice, 12, 0, 1, encodeFor(t, d.cfg, 12, ts)[0].Data)
	cid := func(data []byte) []byte {
		s, err := verify.UnmarshalShard(data, 4<<10)
		if err != nil {
			t.Fatal(err)
		}
		return s.Header.PayloadCID
	}
	served := &cidPeer{shards: map[string][]byte{string(cid(off)): off, string(cid(honest)): honest}}
	ft := newFullTest(t, 16, func(c *fullConfig) {
		c.Due = d
		c.Fetch = &fetchClient{host: served, maxShard: c.Wire.shardCap(), timeout: time.Second}
	})
	ft.holdBundle(alice)
	ft.f.setView(core.View{NextClose: 14, NextLocal: 15, Window: 2, RepairFrom: 11})
	ctx := context.Background()
	if ft.f.fetchCID(ctx, repairWant{round: 12, peer: incentivestest.PeerID("alice"), cid: cid(off), peers: []peer.ID{neighbor}}) {
		t.Fatal("a shard off its round's schedule was taken for a repair")
	}
	if n := ft.count(p2p.KindShards, p2p.Reject, reasonDue); n != 1 {
		t.Fatalf("%v refused as off the schedule, want 1", n)
	}
	ft.inboxEmpty("off the schedule")
	if !ft.f.fetchCID(ctx, repairWant{round: 12, peer: incentivestest.PeerID("alice"), cid: cid(honest), peers: []peer.ID{neighbor}}) {
		t.Fatal("an honest shard of the round was not taken for a repair")
	}
	<-ft.inbox
}
