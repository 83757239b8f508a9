package round

import (
	"bytes"
	"testing"

	"github.com/lowband/lowband/training/compress"
)

// The top-k codec keeps θ the same bytes on every node, in any arrival order.
func TestTopKThetaSameOnEveryNodeInAnyOrder(t *testing.T) {
	weights := []float64{1, 2, 1, 0.5}
	edit := func(c *Config) { c.Compress.Codec, c.Compress.ByteBudget = compress.CodecTopK, 120 }
	want, _ := eagerSim(t, weights, 4, 1, edit)
	lowRank, _ := eagerSim(t, weights, 4, 1)
	if bytes.Equal(want[0][0], lowRank[0][0]) {
		t.Fatal("the top-k codec changed nothing")
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
