package core_test

import (
	"bytes"
	"testing"

	"github.com/lowband/lowband/node/core"
	"github.com/lowband/lowband/verify"
)

// TestRepairRefusesTheEntrysPayloadInAnotherSlot: a signer e whose contribution a majority
// included answers a repair's fetch by (round, signer, CID) with a shard of the same
// payload under another header (Count+1, Index=Count): a new slot, no equivocation. The
// repairing node does not take it as e's entry (it would fail to join, and the node would
// close the round without e, claiming agreement on a root of its own): it keeps waiting
// for the entry's shard, and does not claim to agree.
func TestRepairRefusesTheEntrysPayloadInAnotherSlot(t *testing.T) {
	s := newSwarm(t, 3, ledgerParams(), six, []uint64{100, 100, 100, 100, 100, 100})
	e, a := s.node("e"), s.node("a")
	e.tamper = func(m core.Message) []core.Message {
		if m.Kind != core.KindShards {
			return []core.Message{m}
		}
		sh, err := verify.UnmarshalShard(m.Data, maxPayload)
		if err != nil {
			t.Fatal(err)
		}
		h := sh.Header
		h.Count++
		h.Index = h.Count - 1
		bogus, err := verify.SignShard(s.fx.Key("e"), h, sh.Payload)
		if err != nil {
			t.Fatal(err)
		}
		data, err := bogus.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		list := s.shards[e.id]
		list[len(list)-1] = data // what e serves to fetches
		return []core.Message{m} // what it gossips: the genuine shard
	}
	s.drop = dropShards(0, e, a)
	closeRound0(s)
	weights := map[string]float64{}
	for _, n := range s.nodes {
		weights[n.id] = 1
	}
	ref := s.referenceState(s.node("b"), weights)
	if !bytes.Equal(stateBits(s.node("b").core.State()), stateBits(ref)) {
		t.Fatal("b is not at the six-contribution state")
	}
	ag := a.core.Agreement()
	if len(a.cidFetch) == 0 || len(a.repairs) != 0 || ag.Agrees || ag.Waiting != 1 {
		t.Fatalf("a fetched %d times, repaired %d rounds, agreement %+v: want it waiting for e's shard, not agreeing", len(a.cidFetch), len(a.repairs), ag)
	}
}
