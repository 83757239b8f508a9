package node

import (
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/incentives/incentivestest"
	"github.com/lowband/lowband/node/core"
	"github.com/lowband/lowband/training"
	"github.com/lowband/lowband/training/compress"
	"github.com/lowband/lowband/training/round"
)

// specFor is a validated spec of the default recipe of task.
func specFor(t *testing.T, task string) *configs.Spec {
	t.Helper()
	s := &configs.Spec{Version: configs.SpecVersion, Name: "testnet", Run: "r1", Training: configs.DefaultTrainingSpecFor(task)}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	return s
}

func mustParams(t *testing.T, s *configs.Spec) *Params {
	t.Helper()
	p, err := NewParams(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// thetaBits is θ_0 of p as the bits of its values, in order.
func thetaBits(t *testing.T, p *Params) []uint64 {
	t.Helper()
	st, err := p.Initial()
	if err != nil {
		t.Fatal(err)
	}
	flat := training.Flatten(st.Params)
	out := make([]uint64, len(flat))
	for i, v := range flat {
		out[i] = math.Float64bits(v)
	}
	return out
}

// TestParamsDeterministic: one spec gives one θ_0 (bit for bit), one set of shapes and
// limits and one round configuration; another seed gives another θ_0.
func TestParamsDeterministic(t *testing.T) {
	s := specFor(t, configs.TaskSynthetic)
	a, b := mustParams(t, s), mustParams(t, specFor(t, configs.TaskSynthetic))
	if !reflect.DeepEqual(thetaBits(t, a), thetaBits(t, b)) {
		t.Fatal("the same spec gave two initial models")
	}
	if !reflect.DeepEqual(a.Shapes, b.Shapes) || a.Limits != b.Limits || !reflect.DeepEqual(a.RoundConfig("p", 1), b.RoundConfig("p", 1)) {
		t.Fatalf("the same spec gave two configurations: %+v %+v", a.RoundConfig("p", 1), b.RoundConfig("p", 1))
	}
	rc := a.RoundConfig("p", 2)
	tr := s.Training
	if rc.Self != "p" || rc.Weight != 2 || rc.Delay != 1 || rc.OuterLR != tr.Outer.LR || rc.Momentum != tr.Outer.Momentum ||
		rc.MaxNorm != tr.Compression.MaxNorm || rc.Compress.RankMax != tr.Compression.RankMax || string(rc.Aggregate.Method) != tr.Aggregation.Method {
		t.Fatalf("round config %+v does not follow the spec %+v", rc, tr)
	}
	s.Training.Seed++
	if reflect.DeepEqual(thetaBits(t, a), thetaBits(t, mustParams(t, s))) {
		t.Fatal("another seed gave the same initial model")
	}
}

// realDelta runs one inner step of the spec's optimizer from θ_0 on a random batch and
// returns θ_0 − θ_1, scaled by scale.
func realDelta(t *testing.T, p *Params, scale float64) []compress.Tensor {
	t.Helper()
	m, err := p.NewModel()
	if err != nil {
		t.Fatal(err)
	}
	theta0 := training.Snapshot(m.Params())
	rng := rand.New(rand.NewPCG(1, 2))
	b := training.Batch{N: 4}
	switch p.Training.Task {
	case configs.TaskCharLM:
		for range b.N * p.Training.Context {
			b.Tokens = append(b.Tokens, rng.IntN(CharLMVocab))
		}
		for range b.N {
			b.Y = append(b.Y, rng.IntN(CharLMVocab))
		}
	default:
		in, classes := SyntheticDim, SyntheticClasses
		if p.Training.Task == configs.TaskFMNIST {
			in, classes = FMNISTPixels, FMNISTClasses
		}
		for range b.N * in {
			b.X = append(b.X, rng.Float64())
		}
		for range b.N {
			b.Y = append(b.Y, rng.IntN(classes))
		}
	}
	in := training.Inner{Model: m, Opt: training.NewAdamW(p.Training.Inner.WeightDecay),
		Schedule: training.Schedule{Peak: p.Training.Inner.LR, Min: p.Training.Inner.LR, Total: 1}, Clip: p.Training.Inner.Clip}
	if err := stepOnce(&in, b); err != nil {
		t.Fatal(err)
	}
	delta, err := training.PseudoGradient(theta0, training.Snapshot(m.Params()))
	if err != nil {
		t.Fatal(err)
	}
	out := make([]compress.Tensor, len(delta))
	for i, d := range delta {
		for j := range d.Data {
			d.Data[j] *= scale
		}
		out[i] = compress.Tensor{Name: d.Name, Shape: d.Shape, Data: d.Data}
	}
	return out
}

// stepOnce takes one inner step on b.
func stepOnce(in *training.Inner, b training.Batch) error {
	d := fixedData{b}
	bt, err := training.NewBatcher(d, []int{0}, 1, 0)
	if err != nil {
		return err
	}
	_, err = in.Run(bt, 1)
	return err
}

// fixedData is a data set of one sample: the whole batch.
type fixedData struct{ b training.Batch }

func (d fixedData) Len() int                       { return 1 }
func (d fixedData) Batch(idx []int) training.Batch { return d.b }

// shardsOf encodes delta with the spec's codec and returns the shards' payloads.
func shardsOf(t *testing.T, p *Params, delta []compress.Tensor) [][]byte {
	t.Helper()
	enc, err := compress.NewEncoder(p.RoundConfig("p", 1).Compress)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := enc.Encode(delta)
	if err != nil {
		t.Fatal(err)
	}
	shards, err := msg.Shards()
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, s := range shards {
		out = append(out, s.Data)
	}
	return out
}

// TestContentCheckAcceptsRealShards: for every task's default recipe, every shard of a real
// encoded pseudo-gradient passes the network's content check; the same shards fail the
// check of a model with other shapes, and a pseudo-gradient over the norm bound fails it.
func TestContentCheckAcceptsRealShards(t *testing.T) {
	for _, task := range configs.Tasks {
		t.Run(task, func(t *testing.T) {
			s := specFor(t, task)
			p := mustParams(t, s)
			shards := shardsOf(t, p, realDelta(t, p, 1))
			for i, sh := range shards {
				if err := p.CheckContent(sh); err != nil {
					t.Fatalf("shard %d of %d of an honest pseudo-gradient: %v", i, len(shards), err)
				}
			}
			other := *s
			other.Training.Hidden = append([]int{}, s.Training.Hidden...)
			other.Training.Hidden[0]++
			if err := mustParams(t, &other).CheckContent(shards[0]); !errors.Is(err, compress.ErrShape) {
				t.Errorf("a shard of another model's shapes: %v, want %v", err, compress.ErrShape)
			}
			huge := shardsOf(t, p, realDelta(t, p, 100*p.MaxNorm))
			refused := 0
			for _, sh := range huge {
				if err := p.CheckContent(sh); errors.Is(err, compress.ErrNormTooLarge) {
					refused++
				}
			}
			if refused == 0 {
				t.Errorf("no shard of a pseudo-gradient 100 x over the norm bound was refused")
			}
		})
	}
}

// TestParamsSliceFromSpecAndPeerID: a peer's slice is training.PeerSlice of the spec's seed
// and slice fraction and the peer's canonical ID; anyone with the spec re-derives it; the
// spec's fraction sets its size; an ID that is not a canonical peer ID is refused.
func TestParamsSliceFromSpecAndPeerID(t *testing.T) {
	const n = 50_000
	s := specFor(t, configs.TaskSynthetic)
	p, id := mustParams(t, s), incentivestest.PeerID("alice")
	got, err := p.Slice(id, n)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := training.PeerSlice(n, s.Training.Seed, id, configs.DefaultSliceFraction)
	if !slices.Equal(got, want) {
		t.Fatal("slice is not PeerSlice of the spec's seed and fraction")
	}
	if again, _ := mustParams(t, specFor(t, configs.TaskSynthetic)).Slice(id, n); !slices.Equal(got, again) {
		t.Fatal("another party with the same spec derived another slice")
	}
	if other, _ := p.Slice(incentivestest.PeerID("bob"), n); slices.Equal(got, other) {
		t.Fatal("two peers got the same slice")
	}
	s.Training.SliceFraction = 0.5
	half, _ := mustParams(t, s).Slice(id, n)
	if len(half) < len(got)*3/2 || len(half) > n*3/5 {
		t.Fatalf("fraction 0.5 gave %d samples of %d, fraction %v gave %d", len(half), n, configs.DefaultSliceFraction, len(got))
	}
	for _, i := range got {
		if _, ok := slices.BinarySearch(half, i); !ok {
			t.Fatalf("sample %d of the smaller slice is not in the larger one", i)
		}
	}
	pid, err := peer.Decode(id)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "alice", peer.ToCid(pid).String()} {
		if _, err := p.Slice(bad, n); err == nil {
			t.Errorf("peer %q accepted", bad)
		}
	}
	if _, err := p.Slice(id, 0); !errors.Is(err, training.ErrData) {
		t.Errorf("empty data set: %v, want ErrData", err)
	}
}

// TestParamsDeadlineFromSpec: the round-closing rule comes from the spec's [round] section,
// in seconds, and a rule core cannot use is an error naming the section.
func TestParamsDeadlineFromSpec(t *testing.T) {
	s := specFor(t, configs.TaskSynthetic)
	s.Round = configs.RoundSpec{Quorum: 0.8, DeadlineMin: 0.5, DeadlineMax: 90, DeadlineK: 2}
	d := mustParams(t, s).Deadline
	if d.Quorum != 0.8 || d.Min != 500*time.Millisecond || d.Max != 90*time.Second || d.K != 2 ||
		d.Window != core.DefaultWindow || d.MinObservations != core.DefaultMinObservations {
		t.Fatalf("deadline config %+v", d)
	}
	def := mustParams(t, specFor(t, configs.TaskSynthetic)).Deadline
	if def.Quorum != configs.DefaultQuorum || def.Max != time.Duration(configs.DefaultDeadlineMax)*time.Second {
		t.Fatalf("default deadline config %+v", def)
	}
	s.Round.DeadlineMin = 1e-12 // rounds to no duration at all
	var ke *configs.KeyError
	if _, err := NewParams(s); !errors.As(err, &ke) || ke.Key != "round" || !errors.Is(err, core.ErrConfig) {
		t.Fatalf("unusable rule: got %v", err)
	}
}

// The codec fields the spec may set reach the round configuration.
func TestParamsCodecFieldsReachRoundConfig(t *testing.T) {
	s := specFor(t, configs.TaskSynthetic)
	s.Training.Compression.FactorBits, s.Training.Compression.FeedbackDecay = 2, 0.9
	s.Training.Compression.FirstBudget, s.Training.Compression.PowerIters, s.Training.Outer.StartMix = 3, 3, 0.4
	s.Training.Compression.DenseEvery, s.Training.Outer.StartResidual, s.Training.Outer.Merge = 5, 0.3, true
	rc := mustParams(t, s).RoundConfig("p", 1)
	if !rc.Merge {
		t.Fatal("outer.merge did not reach the round configuration")
	}
	if rc.Compress.FactorBits != 2 || rc.Compress.FeedbackDecay != 0.9 || rc.Compress.FirstBudget != 3 || rc.Compress.PowerIters != 3 || rc.Compress.DenseEvery != 5 {
		t.Fatalf("codec config %+v, want 2-bit factors, decay 0.9, first budget 3, 3 power iterations, dense every 5", rc.Compress)
	}
	if rc.StartPoint != round.StartEager || rc.StartMix != 0.4 || rc.StartResidual != 0.3 {
		t.Fatalf("start %q, mix %v, residual %v; want the eager start with the mix 0.4 and the residual 0.3", rc.StartPoint, rc.StartMix, rc.StartResidual)
	}
	if d := mustParams(t, specFor(t, configs.TaskCharLM)).RoundConfig("p", 1); d.OuterLR != 0.7 || d.StartResidual != 0.25 || d.Compress.FeedbackDecay != 1 || !d.Merge {
		t.Fatalf("the default recipe: lr %v, residual %v, decay %v, merge %v; want 0.7, 0.25, 1 and merge", d.OuterLR, d.StartResidual, d.Compress.FeedbackDecay, d.Merge)
	}
}

// A spec with shared bases (measured by bench train only) is refused by the node, naming the
// key, and a node's limits refuse shared coordinates from peers.
func TestParamsRefuseSharedBases(t *testing.T) {
	s := specFor(t, configs.TaskSynthetic)
	if !mustParams(t, s).Limits.NoShared {
		t.Fatal("a node's limits take shared coordinates from peers")
	}
	s.Training.Compression.SharedRank = 8
	zero := 0
	s.Training.Outer.Delay = &zero
	var ke *configs.KeyError
	if _, err := NewParams(s); !errors.As(err, &ke) || ke.Key != "training.compression.shared_rank" {
		t.Fatalf("shared_rank 8: got %v", err)
	}
}

// A target ratio gives the codec the byte budget compress.RatioBudget computes from the
// model's shapes; a ratio whose budget cannot hold the dense tensors and the lowest ranks
// is refused, naming the key.
func TestParamsTargetRatio(t *testing.T) {
	s := specFor(t, configs.TaskFMNIST)
	s.Training.Compression.TargetRatio, s.Training.Compression.MinLowRank = 1000, 1024
	p := mustParams(t, s)
	// The payload's budget is the ratio's less one shard's signed envelope (a few hundred
	// bytes; TestSignedContributionWithinTargetRatio checks the signed total).
	env, err := shardEnvelopeSize(s.NetworkID(), s.Run)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.RoundConfig("p", 1).Compress.ByteBudget, compress.RatioBudget(p.Shapes, 1000)-env; got != want || want < 1000 || env < 100 || env > 1000 {
		t.Fatalf("byte budget %d, want %d (envelope %d)", got, want, env)
	}
	s.Training.Compression.MinLowRank = 4096 // the 256x10 output layer goes dense and overflows it
	var ke *configs.KeyError
	if _, err := NewParams(s); !errors.As(err, &ke) || ke.Key != "training.compression.target_ratio" {
		t.Fatalf("got %v", err)
	}
}
