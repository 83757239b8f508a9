package node

import (
	"fmt"
	"testing"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/node/core"
	"github.com/lowband/lowband/p2p"
)

// TestEquivocationVariantsBeyondTheSecondIgnored: a peer signing many different shards for
// one slot gets the first two accepted (the second proves the equivocation to the loop and
// to the network) and every later one ignored: they are not forwarded through the mesh nor
// queued for the loop, whose inbox stays free for other peers' shards.
func TestEquivocationVariantsBeyondTheSecondIgnored(t *testing.T) {
	ft := newFullTest(t, 64, nil)
	mallory := ft.fx.Bundle("mallory", "")
	ft.holdBundle(mallory)
	for i := range 10 {
		s := marshalShard(t, ft.fx.Shard("mallory", mallory, 10, 0, fmt.Appendf(nil, "payload %d", i)))
		want, reason := p2p.Accept, reasonOK
		if i >= 2 {
			want, reason = p2p.Ignore, reasonEquivocation
		}
		ft.expect(fmt.Sprint("variant ", i), p2p.KindShards, s, want, reason)
	}
	if n := len(ft.inbox); n != 2 {
		t.Fatalf("%d variants of one slot reached the loop, want 2", n)
	}
}

// TestEquivocationRetriedAfterBusyInbox: the shard that proves an equivocation, ignored
// while the loop's inbox is full, still reaches the loop when it comes again.
func TestEquivocationRetriedAfterBusyInbox(t *testing.T) {
	ft := newFullTest(t, 1, nil)
	mallory := ft.fx.Bundle("mallory", "")
	ft.holdBundle(mallory)
	ft.expect("first", p2p.KindShards, marshalShard(t, ft.fx.Shard("mallory", mallory, 10, 0, []byte("payload"))), p2p.Accept, reasonOK)
	second := marshalShard(t, ft.fx.Shard("mallory", mallory, 10, 0, []byte("payload 2")))
	ft.expect("second, inbox full", p2p.KindShards, second, p2p.Ignore, reasonBusy)
	<-ft.inbox
	if r, reason := ft.f.recheck(second); r != p2p.Accept || len(ft.inbox) != 1 {
		t.Fatalf("the second shard again: %v %s, inbox %d", r, reason, len(ft.inbox))
	}
}

// TestLateEquivocationBecomesEvidence: the second shard of a slot that reaches a node after
// it closed the round (gossip ignores it as late) still proves the equivocation, once; a
// late copy of the held shard, and a third variant, prove nothing more.
func TestLateEquivocationBecomesEvidence(t *testing.T) {
	ft := newFullTest(t, 16, nil)
	mallory := ft.fx.Bundle("mallory", "")
	ft.holdBundle(mallory)
	first := marshalShard(t, ft.fx.Shard("mallory", mallory, 10, 0, []byte("payload")))
	ft.expect("first", p2p.KindShards, first, p2p.Accept, reasonOK)
	if _, ok := (<-ft.inbox).(shardIn); !ok {
		t.Fatal("the first shard did not reach the loop")
	}
	ft.f.setView(core.View{NextClose: 11, NextLocal: 12, Window: 2}) // round 10 closed
	ft.expect("the first again, late", p2p.KindShards, first, p2p.Ignore, reasonLate)
	ft.f.wg.Wait()
	ft.wantEvidence(t, "the first again", false, incentives.KindEquivocation)
	for i, what := range []string{"second, late", "second again", "third"} {
		payload := "payload 2"
		if i == 2 {
			payload = "payload 3"
		}
		ft.expect(what, p2p.KindShards, marshalShard(t, ft.fx.Shard("mallory", mallory, 10, 0, []byte(payload))), p2p.Ignore, reasonLate)
		ft.f.wg.Wait()
		ft.wantEvidence(t, what, i == 0, incentives.KindEquivocation)
	}
}

// TestLateShardWithABadSignatureRejected: a shard of a closed round for a held slot, its
// signature not the peer's, is refused (its forwarder pays), proving nothing.
func TestLateShardWithABadSignatureRejected(t *testing.T) {
	ft := newFullTest(t, 16, nil)
	mallory := ft.fx.Bundle("mallory", "")
	ft.holdBundle(mallory)
	ft.expect("first", p2p.KindShards, marshalShard(t, ft.fx.Shard("mallory", mallory, 10, 0, []byte("payload"))), p2p.Accept, reasonOK)
	<-ft.inbox
	ft.f.setView(core.View{NextClose: 11, NextLocal: 12, Window: 2})
	forged := ft.fx.Shard("mallory", mallory, 10, 0, []byte("payload 2"))
	forged.Sig[0] ^= 1
	ft.expect("forged, late", p2p.KindShards, marshalShard(t, forged), p2p.Reject, reasonSignature)
	ft.f.wg.Wait()
	ft.wantEvidence(t, "forged", false, incentives.KindEquivocation)
}
