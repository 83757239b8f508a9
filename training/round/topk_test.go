package round

import (
	"testing"

	"github.com/lowband/lowband/training/compress"
)

// The top-k codec keeps θ the same bytes on every node, in any arrival order.
func TestTopKThetaSameOnEveryNodeInAnyOrder(t *testing.T) {
	sameThetaEverywhere(t, []float64{1, 2, 1, 0.5}, 4, 0, "the top-k codec", func(c *Config) {
		c.Compress.Codec, c.Compress.ByteBudget = compress.CodecTopK, 120
	})
}
