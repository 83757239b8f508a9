package round

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lowband/lowband/training"
	"github.com/lowband/lowband/training/aggregate"
	"github.com/lowband/lowband/training/compress"
)

func testTheta(seed uint64) []training.Tensor {
	rng := rand.New(rand.NewPCG(seed, 1))
	w := make([]float64, 16*12)
	b := make([]float64, 12)
	for i := range w {
		w[i] = rng.NormFloat64()
	}
	for i := range b {
		b[i] = rng.NormFloat64()
	}
	return []training.Tensor{{Name: "w", Shape: []int{16, 12}, Data: w}, {Name: "b", Shape: []int{12}, Data: b}}
}

// perturb returns theta moved by a small random step, as if by local training.
func perturb(theta []training.Tensor, seed uint64) []training.Tensor {
	rng := rand.New(rand.NewPCG(seed, 2))
	out := make([]training.Tensor, len(theta))
	for i, t := range theta {
		d := slices.Clone(t.Data)
		for j := range d {
			d[j] -= 0.01 * rng.NormFloat64()
		}
		out[i] = training.Tensor{Name: t.Name, Shape: slices.Clone(t.Shape), Data: d}
	}
	return out
}

func testConfig(self string, delay int) Config {
	return Config{
		Self: self, Weight: 1, Delay: delay, OuterLR: 0.7, Momentum: 0.9,
		Compress:  compress.Config{RankMin: 2, RankMax: 4, MinLowRank: 16, MaxShardBytes: compress.MinShardBytes, Seed: 3},
		Aggregate: aggregate.Config{Method: aggregate.Mean},
	}
}

func newMachine(t *testing.T, cfg Config, theta []training.Tensor) *Machine {
	t.Helper()
	m, err := New(cfg, State{Params: theta})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func tensorBits(ts []training.Tensor) []byte {
	var b bytes.Buffer
	for _, t := range ts {
		for _, v := range t.Data {
			binary.Write(&b, binary.LittleEndian, math.Float64bits(v))
		}
	}
	return b.Bytes()
}

func TestOneStepDelayOrdering(t *testing.T) {
	theta0 := testTheta(1)
	m := newMachine(t, testConfig("a", 1), theta0)
	s0, err := m.Start()
	if err != nil || s0.Round != 0 || !bytes.Equal(tensorBits(s0.Params), tensorBits(theta0)) {
		t.Fatalf("Start = %d, %v", s0.Round, err)
	}
	if _, err := m.Start(); !errors.Is(err, ErrOrder) {
		t.Fatalf("second Start: %v", err)
	}
	rd, err := m.LocalDone(0, perturb(theta0, 1))
	if err != nil || rd.Send == nil || rd.Send.Round != 0 || len(rd.Send.Shards) == 0 || rd.Closed != nil {
		t.Fatalf("LocalDone(0) = %+v, %v", rd, err)
	}
	// Round 1's local work starts at once, from θ0: round 0 is not closed yet.
	if rd.Start == nil || rd.Start.Round != 1 || !bytes.Equal(tensorBits(rd.Start.Params), tensorBits(theta0)) {
		t.Fatalf("LocalDone(0) start = %+v", rd.Start)
	}
	if _, ok := m.Closable(); ok {
		t.Fatal("round 0 closable before round 1's local work is done")
	}
	if _, err := m.Close(0); !errors.Is(err, ErrOrder) {
		t.Fatalf("Close(0) before LocalDone(1): %v", err)
	}
	if _, err := m.LocalDone(2, theta0); !errors.Is(err, ErrOrder) {
		t.Fatalf("LocalDone for the wrong round: %v", err)
	}
	rd, err = m.LocalDone(1, perturb(theta0, 2))
	if err != nil || rd.Start != nil {
		t.Fatalf("LocalDone(1) = %+v, %v: round 2 must wait for round 0 to close", rd.Start, err)
	}
	if r, ok := m.Closable(); !ok || r != 0 {
		t.Fatalf("Closable = %d, %v", r, ok)
	}
	rd, err = m.Close(0)
	if err != nil || rd.Closed == nil || rd.Closed.Round != 0 || !slices.Equal(rd.Closed.Included, []string{"a"}) {
		t.Fatalf("Close(0) = %+v, %v", rd.Closed, err)
	}
	if bytes.Equal(tensorBits(rd.Closed.Params), tensorBits(theta0)) {
		t.Fatal("closing round 0 did not change θ")
	}
	// Round 2 starts from θ1, the result of closing round 0.
	if rd.Start == nil || rd.Start.Round != 2 || !bytes.Equal(tensorBits(rd.Start.Params), tensorBits(rd.Closed.Params)) {
		t.Fatalf("Close(0) start = %+v", rd.Start)
	}
	if r, ok := m.Closable(); ok {
		t.Fatalf("round %d closable while round 2's local work is still running", r)
	}
	m.Finish() // abandons round 2's local work; round 1 may now close
	if r, ok := m.Closable(); !ok || r != 1 {
		t.Fatalf("after Finish, Closable = %d, %v", r, ok)
	}
	if _, err := m.LocalDone(2, theta0); !errors.Is(err, ErrOrder) {
		t.Fatalf("LocalDone after Finish: %v", err)
	}
}

func TestNoDelayOrdering(t *testing.T) {
	theta0 := testTheta(1)
	m := newMachine(t, testConfig("a", 0), theta0)
	if _, err := m.Start(); err != nil {
		t.Fatal(err)
	}
	rd, err := m.LocalDone(0, perturb(theta0, 1))
	if err != nil || rd.Start != nil {
		t.Fatalf("LocalDone(0) = %+v, %v: without delay round 1 waits for round 0", rd.Start, err)
	}
	rd, err = m.Close(0)
	if err != nil || rd.Start == nil || rd.Start.Round != 1 || !bytes.Equal(tensorBits(rd.Start.Params), tensorBits(rd.Closed.Params)) {
		t.Fatalf("Close(0) = %+v, %v", rd, err)
	}
}

// contributions returns peers' whole messages for a round, encoded by their own encoders
// and passed through the wire (shards, decode, join).
func contributions(t *testing.T, theta []training.Tensor, r uint64, peers []string) []Contribution {
	t.Helper()
	var out []Contribution
	for i, p := range peers {
		pm := newMachine(t, testConfig(p, 0), theta)
		if _, err := pm.Start(); err != nil {
			t.Fatal(err)
		}
		rd, err := pm.LocalDone(0, perturb(theta, 100+uint64(i)))
		if err != nil {
			t.Fatal(err)
		}
		var parts []*compress.Message
		for _, sh := range rd.Send.Shards {
			part, err := compress.DecodeShard(sh.Data, compress.DefaultLimits)
			if err != nil {
				t.Fatal(err)
			}
			parts = append(parts, part)
		}
		msg, err := compress.Join(parts)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, Contribution{Round: r, Peer: p, Weight: float64(i + 1), Msg: msg})
	}
	return out
}

func TestArrivalOrderDoesNotMatter(t *testing.T) {
	theta0 := testTheta(2)
	peers := []string{"d", "b", "e", "c"}
	cs := contributions(t, theta0, 0, peers)
	var want []byte
	rng := rand.New(rand.NewPCG(5, 5))
	for trial := 0; trial < 6; trial++ {
		m := newMachine(t, testConfig("a", 0), theta0)
		if _, err := m.Start(); err != nil {
			t.Fatal(err)
		}
		order := rng.Perm(len(cs))
		for _, i := range order[:2] { // some arrive before the local work is done
			if err := m.Receive(cs[i]); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := m.LocalDone(0, perturb(theta0, 1)); err != nil {
			t.Fatal(err)
		}
		for _, i := range order[2:] {
			if err := m.Receive(cs[i]); err != nil {
				t.Fatal(err)
			}
		}
		rd, err := m.Close(0)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(rd.Closed.Included, []string{"a", "b", "c", "d", "e"}) {
			t.Fatalf("inclusion list %v", rd.Closed.Included)
		}
		got := tensorBits(rd.Closed.Params)
		if trial == 0 {
			want = got
		} else if !bytes.Equal(got, want) {
			t.Fatalf("arrival order %v changed the bytes of θ", order)
		}
	}
}

func TestReceiveRefusals(t *testing.T) {
	theta0 := testTheta(3)
	m := newMachine(t, testConfig("a", 0), theta0)
	m.Start()
	c := contributions(t, theta0, 0, []string{"b"})[0]
	if err := m.Receive(c); err != nil {
		t.Fatal(err)
	}
	if err := m.Receive(c); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("duplicate: %v", err)
	}
	far := c
	far.Round, far.Peer = 5, "c"
	if err := m.Receive(far); !errors.Is(err, ErrFuture) {
		t.Fatalf("far-future round: %v", err)
	}
	for _, w := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		bad := c
		bad.Peer, bad.Weight = "c", w
		if err := m.Receive(bad); !errors.Is(err, ErrInvalid) {
			t.Fatalf("weight %v: %v", w, err)
		}
	}
	other := contributions(t, []training.Tensor{{Name: "w", Shape: []int{12, 16}, Data: make([]float64, 192)}, {Name: "b", Shape: []int{12}, Data: make([]float64, 12)}}, 0, []string{"c"})[0]
	if err := m.Receive(other); err != nil { // content is checked by the caller's validator
		t.Fatal(err)
	}
	if _, err := m.LocalDone(0, perturb(theta0, 1)); err != nil {
		t.Fatal(err)
	}
	rd, err := m.Close(0)
	if err != nil || !slices.Equal(rd.Closed.Included, []string{"a", "b"}) || !slices.Equal(rd.Closed.Rejected, []string{"c"}) {
		t.Fatalf("Close(0) = %+v, %v: the mis-shaped contribution must be rejected", rd.Closed, err)
	}
	late := c
	late.Peer = "c"
	if err := m.Receive(late); !errors.Is(err, ErrClosed) {
		t.Fatalf("contribution for a closed round: %v", err)
	}
	next := c
	next.Round, next.Peer = 1, "c"
	if err := m.Receive(next); err != nil {
		t.Fatalf("contribution for the open round: %v", err)
	}
}

// With an exact codec (full rank, no quantisation), outer lr 1 and no momentum, one node's
// round machine moves θ to its local parameters, and its state holds no momentum buffer
// (it would only repeat the last aggregate); a state that brings one is refused.
func TestExactCodecSingleNode(t *testing.T) {
	theta0 := testTheta(4)
	cfg := testConfig("a", 0)
	cfg.OuterLR, cfg.Momentum = 1, 0
	cfg.Compress = compress.Config{RankMin: 12, RankMax: 12, MinLowRank: 16, NoQuant: true, PowerIters: 4, Seed: 1}
	m := newMachine(t, cfg, theta0)
	m.Start()
	local := perturb(theta0, 9)
	if _, err := m.LocalDone(0, local); err != nil {
		t.Fatal(err)
	}
	rd, err := m.Close(0)
	if err != nil {
		t.Fatal(err)
	}
	for i, tt := range rd.Closed.Params {
		for j, v := range tt.Data {
			if d := math.Abs(v - local[i].Data[j]); d > 1e-9 {
				t.Fatalf("%s[%d] = %v, local %v", tt.Name, j, v, local[i].Data[j])
			}
		}
	}
	st := m.State()
	if st.Round != 1 || st.Momentum != nil {
		t.Fatalf("state round %d, momentum of %d values", st.Round, len(st.Momentum))
	}
	st.Momentum = make([]float64, 16*12+12)
	if err := m.Reset(st); err == nil {
		t.Fatal("a momentum buffer without momentum was taken")
	}
	if _, _, err := Step(cfg, st, nil, nil); err == nil {
		t.Fatal("Step took a momentum buffer without momentum")
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	theta := testTheta(1)
	for _, mut := range []func(*Config){
		func(c *Config) { c.Self = "" },
		func(c *Config) { c.Weight = 0 },
		func(c *Config) { c.Delay = 2 },
		func(c *Config) { c.OuterLR = 0 },
		func(c *Config) { c.Momentum = 1 },
		func(c *Config) { c.Compress.RankMin = -1 },
	} {
		c := testConfig("a", 0)
		mut(&c)
		if _, err := New(c, State{Params: theta}); err == nil {
			t.Errorf("config %+v accepted", c)
		}
	}
	if _, err := New(testConfig("a", 0), State{Params: theta, Momentum: []float64{1}}); err == nil {
		t.Error("momentum of the wrong size accepted")
	}
}
