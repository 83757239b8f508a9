package round

import (
	"slices"
	"testing"

	"github.com/lowband/lowband/training"
	"github.com/lowband/lowband/training/compress"
)

// With the dense tensors sent every few rounds (compress.Config.DenseEvery), θ is the same
// bytes on every node in any arrival order, and differs from sending every tensor.
func TestDenseEveryThetaSameOnEveryNodeInAnyOrder(t *testing.T) {
	sameThetaEverywhere(t, []float64{1, 2, 1, 0.5}, 5, 1, "dense every 2", func(c *Config) { c.Compress.DenseEvery = 2 })
}

// A tensor not due in a round counts as zero: with plain outer SGD, a round in which the
// bias is not due leaves it where it was; a contribution that leaves out a due tensor, or
// carries one that is not due, is rejected at close on every node.
func TestDenseEveryMissingTensorIsZeroAndOmissionRejected(t *testing.T) {
	theta0 := testTheta(1)
	cfg := testConfig("a", 0)
	cfg.Momentum, cfg.Compress.DenseEvery = 0, 2
	m := newMachine(t, cfg, theta0)
	s, err := m.Start()
	if err != nil {
		t.Fatal(err)
	}
	// Peers whose codec sends the rounds' tensors wrongly: "b-late" encodes round r as if it
	// were round r+1 (round 0 without the bias, round 1 with it), "c-every" every tensor.
	late, _ := compress.NewEncoder(cfg.Compress)
	plain := cfg.Compress
	plain.DenseEvery = 0
	every, _ := compress.NewEncoder(plain)
	var bias []float64
	for r := uint64(0); r < 2; r++ {
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
		rd, err := m.LocalDone(r, local)
		if err != nil {
			t.Fatal(err)
		}
		for peer, msg := range map[string]*compress.Message{"b-late": wrong, "c-every": all} {
			if err := m.Receive(Contribution{Round: r, Peer: peer, Weight: 1, Msg: msg}); err != nil {
				t.Fatal(err)
			}
		}
		rd, err = m.Close(r)
		if err != nil {
			t.Fatal(err)
		}
		// Round 0 carries every tensor, so c-every is right there.
		wantIn, wantOut := []string{"a", "c-every"}, []string{"b-late"}
		if r == 1 {
			wantIn, wantOut = []string{"a"}, []string{"b-late", "c-every"}
		}
		if !slices.Equal(rd.Closed.Included, wantIn) || !slices.Equal(rd.Closed.Rejected, wantOut) {
			t.Fatalf("round %d: included %v, rejected %v", r, rd.Closed.Included, rd.Closed.Rejected)
		}
		b := rd.Closed.Params[1].Data // "b": the only dense tensor, due in even rounds
		if r == 1 && !slices.Equal(b, bias) {
			t.Fatal("round 1 moved the bias, which it does not carry")
		}
		if r == 0 && slices.Equal(b, theta0[1].Data) {
			t.Fatal("round 0 did not move the bias, which it carries")
		}
		bias, s = slices.Clone(b), *rd.Start
	}
}
