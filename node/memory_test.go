package node

import (
	"testing"

	"github.com/lowband/lowband/configs"
)

// The default memory limit fits a node of the default charlm network by the node's own
// estimate, so that the default setup never warns; a limit a quarter of it would.
func TestDefaultMemoryLimitFitsTheDefaultNetwork(t *testing.T) {
	s := specFor(t, configs.TaskCharLM)
	p := mustParams(t, s)
	need := liveEstimate(p.Limits.MaxElements, s.Training.Outer.Momentum != 0)
	if limit := int64(configs.DefaultMemoryLimitMiB) << 20; need > limit || need < limit/4 {
		t.Fatalf("a charlm node is estimated at %d MiB, the default limit is %d MiB", need>>20, limit>>20)
	}
}
