package round

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lowband/lowband/training"
	"github.com/lowband/lowband/training/compress"
)

// fragTheta is a model of three low-rank matrices (at MinLowRank 16) and their biases.
func fragTheta(seed uint64) []training.Tensor {
	rng := rand.New(rand.NewPCG(seed, 1))
	var out []training.Tensor
	for i, s := range [][]int{{16, 12}, {12}, {12, 10}, {10}, {10, 8}, {8}} {
		n := s[0]
		if len(s) == 2 {
			n *= s[1]
		}
		d := make([]float64, n)
		for j := range d {
			d[j] = rng.NormFloat64()
		}
		out = append(out, training.Tensor{Name: string(rune('a' + i)), Shape: slices.Clone(s), Data: d})
	}
	return out
}

// With the matrices sent in turn (compress.Config.Fragments), with and without the delay,
// a byte budget and the biases held back too, θ is the same bytes on every node after
// every round and in every arrival order, and differs from sending every matrix.
func TestFragmentsThetaSameOnEveryNodeInAnyOrder(t *testing.T) {
	weights := []float64{1, 2, 1, 0.5}
	undelayed := func(c *Config) { c.Delay, c.StartPoint, c.StartMix, c.Momentum = 0, StartGlobal, 0, 0 }
	codec := func(c *Config) {
		c.Compress.FactorBits, c.Compress.ByteBudget, c.Compress.FeedbackDecay, c.Compress.RankMax = 2, 150, 0.9, 8
	}
	for _, k := range []int{2, 3, 5} {
		for _, base := range [][]func(*Config){{codec}, {codec, undelayed}, {undelayed}} {
			frag := append(slices.Clone(base), func(c *Config) { c.Compress.Fragments, c.Compress.DenseEvery = k, 2 })
			want, _ := eagerSimOn(t, fragTheta(5), weights, 6, 1, frag...)
			plain, _ := eagerSimOn(t, fragTheta(5), weights, 6, 1, base...)
			if bytes.Equal(want[2][0], plain[2][0]) {
				t.Fatalf("fragments %d changed nothing", k)
			}
			for r, nodes := range want {
				for i := range nodes {
					if !bytes.Equal(nodes[i], nodes[0]) {
						t.Fatalf("fragments %d round %d: node %d's θ differs from node 0's", k, r, i)
					}
				}
			}
			for seed := uint64(2); seed < 5; seed++ {
				got, _ := eagerSimOn(t, fragTheta(5), weights, 6, seed, frag...)
				for r := range want {
					if !bytes.Equal(got[r][0], want[r][0]) {
						t.Fatalf("fragments %d, arrival order %d changed the bytes of θ after round %d", k, seed, r)
					}
				}
			}
		}
	}
}

// A matrix not due in a round counts as zero: with plain outer SGD, a round leaves the
// matrices it does not carry where they were and moves the others; a contribution that
// carries a matrix that is not due, or leaves out one that is, is rejected on every node.
func TestFragmentsMissingMatrixIsZeroAndOmissionRejected(t *testing.T) {
	theta0 := fragTheta(2)
	cfg := testConfig("a", 0)
	cfg.Momentum, cfg.Compress.Fragments, cfg.Compress.MinLowRank = 0, 3, 16
	m := newMachine(t, cfg, theta0)
	s, err := m.Start()
	if err != nil {
		t.Fatal(err)
	}
	late, _ := compress.NewEncoder(cfg.Compress) // encodes round r as round r+1
	plain := cfg.Compress
	plain.Fragments = 0
	every, _ := compress.NewEncoder(plain)
	shapes := make([][]int, len(theta0))
	for i, x := range theta0 {
		shapes[i] = x.Shape
	}
	prev := theta0
	for r := uint64(0); r < 6; r++ {
		local := perturb(s.Params, 10+r)
		delta, _ := training.PseudoGradient(s.Params, local)
		ts := make([]compress.Tensor, len(delta))
		for i, d := range delta {
			ts[i] = compress.Tensor(d)
		}
		wrong, err := late.EncodeRound(r+1, ts)
		if err != nil {
			t.Fatal(err)
		}
		all, err := every.Encode(ts)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.LocalDone(r, local); err != nil {
			t.Fatal(err)
		}
		for peer, msg := range map[string]*compress.Message{"b-late": wrong, "c-every": all} {
			if err := m.Receive(Contribution{Round: r, Peer: peer, Weight: 1, Msg: msg}); err != nil {
				t.Fatal(err)
			}
		}
		rd, err := m.Close(r)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(rd.Closed.Included, []string{"a"}) || !slices.Equal(rd.Closed.Rejected, []string{"b-late", "c-every"}) {
			t.Fatalf("round %d: included %v, rejected %v", r, rd.Closed.Included, rd.Closed.Rejected)
		}
		due := cfg.Compress.Due(r, shapes)
		for i, x := range rd.Closed.Params {
			if moved := !slices.Equal(x.Data, prev[i].Data); moved != due[i] {
				t.Fatalf("round %d: %q moved %v, due %v", r, x.Name, moved, due[i])
			}
		}
		prev, s = rd.Closed.Params, *rd.Start
	}
}
