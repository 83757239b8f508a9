package round

import (
	"math/rand/v2"
	"testing"

	"github.com/lowband/lowband/training"
	"github.com/lowband/lowband/training/compress"
)

// BenchmarkDecodeContribution decodes one contribution of a model shaped like the default
// charlm (about 1.45M parameters) at rank 2, as Close does for every contribution.
func BenchmarkDecodeContribution(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	shapes := [][]int{{80, 64}, {1024, 768}, {768}, {768, 768}, {768}, {768, 80}, {80}}
	var theta []training.Tensor
	for i, s := range shapes {
		n := 1
		for _, d := range s {
			n *= d
		}
		d := make([]float64, n)
		for j := range d {
			d[j] = rng.NormFloat64()
		}
		theta = append(theta, training.Tensor{Name: string(rune('a' + i)), Shape: s, Data: d})
	}
	cfg := Config{Self: "a", Weight: 1, OuterLR: 0.35, Momentum: 0.5,
		Compress: compress.Config{RankMin: 1, RankMax: 2, EnergyTarget: 0.5, PowerIters: 1, BlockSize: 64, DenseBits: 4, Seed: 1}}
	m, err := New(cfg, State{Params: theta})
	if err != nil {
		b.Fatal(err)
	}
	s, _ := m.Start()
	rd, err := m.LocalDone(0, perturb(s.Params, 3))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(8 * len(m.theta)))
	buf, vec := make([]float64, checkChunk), make([]float64, m.size)
	for b.Loop() { // checked range by range, then read whole
		r, err := m.reader(rd.Send.Msg, maxNorm(m.cfg), buf, nil)
		if err == nil {
			err = r.Read(0, m.size, vec)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}
