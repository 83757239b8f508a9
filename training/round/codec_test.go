package round

import (
	"bytes"
	"testing"
)

// The codec options the network spec may set (2-bit factors, a byte budget, a decayed error
// feedback) keep θ the same bytes on every node, in any arrival order.
func TestCodecOptionsThetaSameOnEveryNodeInAnyOrder(t *testing.T) {
	weights := []float64{1, 2, 1, 0.5}
	edit := func(c *Config) {
		c.Compress.FactorBits, c.Compress.ByteBudget, c.Compress.FeedbackDecay = 2, 400, 0.9
		c.Compress.RankMax = 8
	}
	want, _ := eagerSim(t, weights, 4, 1, edit)
	four, _ := eagerSim(t, weights, 4, 1)
	if bytes.Equal(want[0][0], four[0][0]) {
		t.Fatal("the codec options changed nothing")
	}
	for r, nodes := range want {
		for i := range nodes {
			if !bytes.Equal(nodes[i], nodes[0]) {
				t.Fatalf("round %d: node %d's θ differs from node 0's", r, i)
			}
		}
	}
	for seed := uint64(2); seed < 5; seed++ {
		got, _ := eagerSim(t, weights, 4, seed, edit)
		for r := range want {
			if !bytes.Equal(got[r][0], want[r][0]) {
				t.Fatalf("arrival order %d changed the bytes of θ after round %d", seed, r)
			}
		}
	}
}
