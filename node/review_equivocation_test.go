package node

import (
	"fmt"
	"testing"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
	"github.com/lowband/lowband/node/core"
	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/verify"
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
	if s, e := ft.events(); s != 2 || e != 1 {
		t.Fatalf("%d variants of one slot and %d evidence items reached the loop, want 2 and 1", s, e)
	}
}

// TestEquivocationRetriedAfterBusyInbox: the shard that proves an equivocation, ignored
// while the loop's inbox is full, still reaches the loop when it comes again (with the
// evidence it makes, which goes to the loop off the validator's goroutine: the inbox has
// room for both).
func TestEquivocationRetriedAfterBusyInbox(t *testing.T) {
	ft := newFullTest(t, 2, nil)
	mallory, alice := ft.fx.Bundle("mallory", ""), ft.fx.Bundle("alice", "")
	ft.holdBundle(mallory)
	ft.holdBundle(alice)
	ft.expect("first", p2p.KindShards, marshalShard(t, ft.fx.Shard("mallory", mallory, 10, 0, []byte("payload"))), p2p.Accept, reasonOK)
	ft.expect("filler", p2p.KindShards, marshalShard(t, ft.fx.Shard("alice", alice, 10, 0, []byte("payload"))), p2p.Accept, reasonOK)
	second := marshalShard(t, ft.fx.Shard("mallory", mallory, 10, 0, []byte("payload 2")))
	ft.expect("second, inbox full", p2p.KindShards, second, p2p.Ignore, reasonBusy)
	ft.f.wg.Wait() // the evidence it made found the inbox full too
	<-ft.inbox
	<-ft.inbox
	if r, reason := ft.f.recheck(second); r != p2p.Accept {
		t.Fatalf("the second shard again: %v %s", r, reason)
	}
	if shards, evidence := ft.events(); shards != 1 || evidence != 1 {
		t.Fatalf("the second shard again: %d shards and %d evidence items reached the loop, want 1 and 1", shards, evidence)
	}
}

// TestLateEquivocationBecomesEvidence: the second shard of a slot that reaches a node after
// it closed the round (gossip ignores it as late) still proves the equivocation, once; a
// late copy of the held shard, and a third variant, prove nothing more.
func TestLateEquivocationBecomesEvidence(t *testing.T) {
	ft, mallory, a := heldSlot(t)
	first := marshalShard(t, a)
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
	ft, mallory, _ := heldSlot(t)
	ft.f.setView(core.View{NextClose: 11, NextLocal: 12, Window: 2})
	forged := ft.fx.Shard("mallory", mallory, 10, 0, []byte("payload 2"))
	forged.Sig[0] ^= 1
	ft.expect("forged, late", p2p.KindShards, marshalShard(t, forged), p2p.Reject, reasonSignature)
	ft.f.wg.Wait()
	ft.wantEvidence(t, "forged", false, incentives.KindEquivocation)
}

// heldSlot is a full test holding mallory's bundle and the first shard of its slot 0 of
// round 10, which reached the loop (the inbox is emptied): the bundle and the shard.
func heldSlot(t *testing.T) (*fullTest, []byte, *verify.Shard) {
	t.Helper()
	ft := newFullTest(t, 16, nil)
	mallory := ft.fx.Bundle("mallory", "")
	ft.holdBundle(mallory)
	a := ft.fx.Shard("mallory", mallory, 10, 0, []byte("payload"))
	ft.expect("first", p2p.KindShards, marshalShard(t, a), p2p.Accept, reasonOK)
	if s, e := ft.events(); s != 1 || e != 0 {
		t.Fatalf("the first shard: %d shards and %d evidence items to the loop, want 1 and 0", s, e)
	}
	return ft, mallory, a
}

// resigned is s with its header signed again by peer's key under another nonce: the same
// content, another valid signature, which only the signer can make.
func resigned(t *testing.T, ft *fullTest, peer string, s *verify.Shard) *verify.Shard {
	t.Helper()
	msg, err := s.Header.SigningBytes()
	if err != nil {
		t.Fatal(err)
	}
	sig, err := incentivestest.SignWithNonce(ft.fx.Key(peer), msg, 7)
	if err != nil {
		t.Fatal(err)
	}
	c := *s
	c.Sig = sig
	return &c
}

// events empties the inbox, once the checks started meanwhile are done, and counts the
// shards and evidence items in it.
func (ft *fullTest) events() (shards, evidence int) {
	ft.f.wg.Wait()
	for len(ft.inbox) > 0 {
		switch (<-ft.inbox).(type) {
		case shardIn:
			shards++
		case evidenceIn:
			evidence++
		}
	}
	return shards, evidence
}

// TestResignedShardIsNoConflict: a copy of a held shard under another signature of its
// signer (same header, same content) is ignored, neither forwarded nor handed to the loop
// nor taken for the slot's conflict, in an open round and a closed one alike; the shard
// with another header that follows still proves the equivocation. Bytes told the two
// apart: the re-signed copy passed as the conflict and hid the real second version.
func TestResignedShardIsNoConflict(t *testing.T) {
	for _, closed := range []bool{false, true} {
		t.Run(fmt.Sprint("closed ", closed), func(t *testing.T) {
			ft, mallory, a := heldSlot(t)
			want, reason := p2p.Ignore, reasonResigned
			if closed {
				ft.f.setView(core.View{NextClose: 11, NextLocal: 12, Window: 2})
				reason = reasonLate
			}
			ft.expect("re-signed copy", p2p.KindShards, marshalShard(t, resigned(t, ft, "mallory", a)), want, reason)
			if s, e := ft.events(); s != 0 || e != 0 || len(ft.published) != 0 {
				t.Fatalf("the re-signed copy: %d shards and %d evidence items to the loop, %d published", s, e, len(ft.published))
			}
			b := ft.fx.Shard("mallory", mallory, 10, 0, []byte("payload 2"))
			want, reason = p2p.Accept, reasonOK
			if closed {
				want, reason = p2p.Ignore, reasonLate
			}
			ft.expect("second version", p2p.KindShards, marshalShard(t, b), want, reason)
			s, e := ft.events()
			if e != 1 || len(ft.published) != 1 || s != map[bool]int{false: 1, true: 0}[closed] {
				t.Fatalf("the second version: %d shards and %d evidence items to the loop, %d published", s, e, len(ft.published))
			}
		})
	}
}

// TestRepairFetchOfTheOtherVersionProves: a repair that fetches, by CID, the other
// version of a held slot proves the equivocation at once; the later gossip copy of it
// adds nothing.
func TestRepairFetchOfTheOtherVersionProves(t *testing.T) {
	ft, mallory, _ := heldSlot(t)
	ft.f.setView(core.View{NextClose: 11, NextLocal: 12, Window: 2, RepairFrom: 8})
	b := ft.fx.Shard("mallory", mallory, 10, 0, []byte("payload 2"))
	bd := marshalShard(t, b)
	if r, reason := ft.f.repairShard(t.Context(), "", repairWant{round: 10, peer: b.Header.Peer, cid: b.Header.PayloadCID}, bd); r != p2p.Accept {
		t.Fatalf("repair: %v %s", r, reason)
	}
	if s, e := ft.events(); s != 1 || e != 1 || len(ft.published) != 1 {
		t.Fatalf("the repair's fetch: %d shards and %d evidence items to the loop, %d published", s, e, len(ft.published))
	}
	ft.expect("the other version, late by gossip", p2p.KindShards, bd, p2p.Ignore, reasonLate)
	if s, e := ft.events(); s != 0 || e != 0 || len(ft.published) != 1 {
		t.Fatalf("the gossip copy: %d shards and %d evidence items to the loop, %d published in all", s, e, len(ft.published))
	}
}

// TestRepairAnswerInASlotTheEntryHoldsRefusedAndProves: a repair holds shard 0 of a
// two-shard entry and asks for its other CID with index 0 taken (core.Want.Taken); the
// signer answers with that payload under index 0 as well. The answer is refused (it would
// not join: the node would close the round without the entry) and not handed to the loop,
// and the two shards, both signed by the signer for slot 0, are the equivocation's
// evidence; the payload under index 1, from the next peer, is taken.
func TestRepairAnswerInASlotTheEntryHoldsRefusedAndProves(t *testing.T) {
	ft := newFullTest(t, 16, nil)
	mallory := ft.fx.Bundle("mallory", "")
	ft.holdBundle(mallory)
	ft.f.setView(core.View{NextClose: 11, NextLocal: 12, Window: 2, RepairFrom: 8})
	b, err := verify.UnmarshalBundle(mallory)
	if err != nil {
		t.Fatal(err)
	}
	bh := b.Hash()
	sign := func(index uint32, payload string) *verify.Shard {
		h := verify.ShardHeader{Network: ft.fx.Network, Run: ft.fx.Run, Round: 10, Peer: b.PeerID, Index: index, Count: 2, BundleHash: bh[:]}
		s, err := verify.SignShard(ft.fx.Key("mallory"), h, []byte(payload))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	first, clash, second := sign(0, "payload 0"), sign(0, "payload 1"), sign(1, "payload 1")
	want := func(s *verify.Shard, taken ...uint32) repairWant {
		return repairWant{round: 10, peer: b.PeerID, cid: s.Header.PayloadCID, count: 2, taken: taken}
	}
	if r, reason := ft.f.repairShard(t.Context(), "", want(first), marshalShard(t, first)); r != p2p.Accept {
		t.Fatalf("the entry's shard 0: %v %s", r, reason)
	}
	if s, e := ft.events(); s != 1 || e != 0 {
		t.Fatalf("the entry's shard 0: %d shards and %d evidence items to the loop", s, e)
	}
	if r, reason := ft.f.repairShard(t.Context(), "", want(clash, 0), marshalShard(t, clash)); r != p2p.Ignore || reason != reasonDecode {
		t.Fatalf("the other payload under index 0: %v %s, want it refused", r, reason)
	}
	if s, e := ft.events(); s != 0 || e != 1 || len(ft.published) != 1 {
		t.Fatalf("the other payload under index 0: %d shards and %d evidence items to the loop, %d published; want the evidence alone", s, e, len(ft.published))
	}
	if r, reason := ft.f.repairShard(t.Context(), "", want(second, 0), marshalShard(t, second)); r != p2p.Accept {
		t.Fatalf("the payload under index 1: %v %s", r, reason)
	}
	if s, e := ft.events(); s != 1 || e != 0 {
		t.Fatalf("the payload under index 1: %d shards and %d evidence items to the loop", s, e)
	}
}
