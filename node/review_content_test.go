package node

import (
	"fmt"
	"testing"

	"github.com/lowband/lowband/incentives/incentivestest"
)

// TestContentStoreFloodKeepsHonestShards: one attested peer filling the content store
// with shards of a later round pushes out its own shards, not an honest peer's shard of
// the open round, which the node keeps serving to peers that missed it.
func TestContentStoreFloodKeepsHonestShards(t *testing.T) {
	fx := incentivestest.New("net-a", "run-a")
	alice, mallory := fx.Bundle("alice", ""), fx.Bundle("mallory", "")
	honest := fx.Shard("alice", alice, 10, 0, []byte("payload"))
	data := marshalShard(t, honest)
	c := newContentStore(8 * len(data))
	c.put(honest, data)
	for i := range 64 {
		s := fx.Shard("mallory", mallory, 12, uint32(i), fmt.Appendf(nil, "payload %d", i))
		c.put(s, marshalShard(t, s))
	}
	if c.shard(slotOf(&honest.Header)) == nil {
		t.Fatal("the honest peer's shard of the open round was pushed out by another peer's flood")
	}
	if c.bytes > c.maxBytes {
		t.Fatalf("%d bytes held, bound %d", c.bytes, c.maxBytes)
	}
	if c.prune(13); c.bytes != 0 || len(c.bySlot)+len(c.byCID)+len(c.byRound)+len(c.byPeer)+len(c.peerLoad) != 0 {
		t.Fatalf("after pruning every round: %d bytes, %d slots, %d CIDs, %d rounds, %d peers", c.bytes, len(c.bySlot), len(c.byCID), len(c.byRound), len(c.byPeer))
	}
}
