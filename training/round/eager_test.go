package round

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lowband/lowband/training"
	"github.com/lowband/lowband/training/compress"
)

func eagerConfig(self string, weight float64) Config {
	cfg := testConfig(self, 1)
	cfg.StartPoint, cfg.Weight, cfg.OuterLR, cfg.Momentum = StartEager, weight, 0.5, 0.5
	return cfg
}

// With the eager start, round t+1's local work starts from θ_t minus OuterLR times the
// node's weight share times its own pseudo-gradient of round t; before any round has
// closed (no share known) it starts from θ.
func TestEagerStartAddsOwnPseudoGradient(t *testing.T) {
	theta0 := testTheta(7)
	m := newMachine(t, eagerConfig("a", 1), theta0)
	if _, err := m.Start(); err != nil {
		t.Fatal(err)
	}
	rd, err := m.LocalDone(0, perturb(theta0, 1))
	if err != nil || rd.Start == nil || !bytes.Equal(tensorBits(rd.Start.Params), tensorBits(theta0)) {
		t.Fatalf("round 1 must start from θ0 while no round is closed: %+v, %v", rd.Start, err)
	}
	start1 := rd.Start.Params
	for _, r := range []uint64{0, 1} {
		if err := m.Receive(contributions(t, theta0, r, []string{"b"})[0]); err != nil { // weight 1
			t.Fatal(err)
		}
	}
	local1 := perturb(start1, 2)
	if _, err := m.LocalDone(1, local1); err != nil {
		t.Fatal(err)
	}
	rd, err = m.Close(0)
	if err != nil || rd.Start == nil || rd.Start.Round != 2 {
		t.Fatalf("Close(0) = %+v, %v", rd, err)
	}
	c := float64(0.5 * 0.5) // outer lr times the share 1/(1+1)
	for i, tt := range rd.Closed.Params {
		for j, v := range tt.Data {
			own := start1[i].Data[j] - local1[i].Data[j]
			want := v - float64(c*own)
			if got := rd.Start.Params[i].Data[j]; math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("round 2 start %s[%d] = %v, want θ1 − lr·share·Δ_own = %v", tt.Name, j, got, want)
			}
		}
	}
}

// eagerSim runs nodes with the eager start for some rounds, delivering every node's
// shards to every other node, senders in an order drawn from orderSeed. It returns, per
// closed round, every node's θ bytes, and every node's start of the last started round.
// edit, if given, changes every node's configuration.
func eagerSim(t *testing.T, weights []float64, rounds int, orderSeed uint64, edit ...func(*Config)) ([][][]byte, [][]byte) {
	t.Helper()
	return eagerSimOn(t, testTheta(8), weights, rounds, orderSeed, edit...)
}

// eagerSimOn is eagerSim from θ_0 = theta0.
func eagerSimOn(t *testing.T, theta0 []training.Tensor, weights []float64, rounds int, orderSeed uint64, edit ...func(*Config)) ([][][]byte, [][]byte) {
	t.Helper()
	n := len(weights)
	ms, starts := make([]*Machine, n), make([][]training.Tensor, n)
	for i := range ms {
		cfg := eagerConfig(fmt.Sprint("peer-", i), weights[i])
		for _, e := range edit {
			e(&cfg)
		}
		ms[i] = newMachine(t, cfg, theta0)
		s, err := ms[i].Start()
		if err != nil {
			t.Fatal(err)
		}
		starts[i] = s.Params
	}
	var closed [][][]byte
	rng := rand.New(rand.NewPCG(orderSeed, 3))
	for r := uint64(0); r < uint64(rounds); r++ {
		shards := make([][]compress.Shard, n)
		for i, m := range ms {
			rd, err := m.LocalDone(r, perturb(starts[i], 1000*r+uint64(i)))
			if err != nil {
				t.Fatal(err)
			}
			shards[i] = rd.Send.Shards
			if rd.Start != nil {
				starts[i] = rd.Start.Params
			}
		}
		for i, m := range ms {
			for _, v := range rng.Perm(n) {
				if v != i {
					deliver(t, m, r, fmt.Sprint("peer-", v), weights[v], shards[v])
				}
			}
		}
		for i, m := range ms {
			for {
				next, ok := m.Closable()
				if !ok {
					break
				}
				rd, err := m.Close(next)
				if err != nil {
					t.Fatal(err)
				}
				for int(next) >= len(closed) {
					closed = append(closed, make([][]byte, n))
				}
				closed[next][i] = tensorBits(rd.Closed.Params)
				if rd.Start != nil {
					starts[i] = rd.Start.Params
				}
			}
		}
	}
	last := make([][]byte, n)
	for i := range starts {
		last[i] = tensorBits(starts[i])
	}
	return closed, last
}

func deliver(t *testing.T, m *Machine, r uint64, peer string, weight float64, shards []compress.Shard) {
	t.Helper()
	parts := make([]*compress.Message, len(shards))
	for i, sh := range shards {
		p, err := compress.DecodeShard(sh.Data, compress.DefaultLimits)
		if err != nil {
			t.Fatal(err)
		}
		parts[i] = p
	}
	msg, err := compress.Join(parts)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Receive(Contribution{Round: r, Peer: peer, Weight: weight, Msg: msg}); err != nil {
		t.Fatal(err)
	}
}

// With the eager start on, every node computes the same bytes of θ for every closed round,
// whatever the order in which contributions arrive, while the nodes' start points differ.
func TestEagerThetaSameOnEveryNodeInAnyOrder(t *testing.T) {
	weights := []float64{1, 2, 1, 0.5}
	want, starts := eagerSim(t, weights, 5, 1)
	if len(want) != 4 {
		t.Fatalf("%d rounds closed, want 4", len(want))
	}
	for r, nodes := range want {
		for i := range nodes {
			if !bytes.Equal(nodes[i], nodes[0]) {
				t.Fatalf("round %d: node %d's θ differs from node 0's", r, i)
			}
		}
	}
	for i := 1; i < len(starts); i++ {
		if bytes.Equal(starts[i], starts[0]) {
			t.Fatalf("nodes 0 and %d start from the same point: the eager start is not private", i)
		}
	}
	for seed := uint64(2); seed < 5; seed++ {
		got, _ := eagerSim(t, weights, 5, seed)
		for r := range want {
			if !bytes.Equal(got[r][0], want[r][0]) {
				t.Fatalf("arrival order %d changed the bytes of θ after round %d", seed, r)
			}
		}
	}
}

func TestEagerNeedsDelay(t *testing.T) {
	for _, c := range []Config{
		func() Config { c := testConfig("a", 0); c.StartPoint = StartEager; return c }(),
		func() Config { c := testConfig("a", 1); c.StartPoint = "lazy"; return c }(),
	} {
		if _, err := New(c, State{Params: testTheta(1)}); err == nil {
			t.Errorf("start point %q with delay %d accepted", c.StartPoint, c.Delay)
		}
	}
}
