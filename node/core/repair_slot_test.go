package core_test

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/lowband/lowband/node/core"
	"github.com/lowband/lowband/training"
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

// TestRepairRefusesAnotherOfTheEntrysPayloadsInATakenIndex: e's contribution, which a
// majority included, has two shards; a missed them. Answering a's fetch by CID, e sends
// its second payload under index 0 as well (right count, an index the entry's first shard
// holds: e signed two of the entry's payloads for one slot). The two do not join, and a
// node that took it closed the round without e, on a root of its own. a refuses it,
// whichever of the two came first (the one whose index is the part its payload was cut
// for stays), asks for that CID again with index 0 taken, and once another peer sends
// the shard under index 1 it repairs to the state of the six contributions.
func TestRepairRefusesAnotherOfTheEntrysPayloadsInATakenIndex(t *testing.T) {
	for _, clashFirst := range []bool{false, true} {
		t.Run(fmt.Sprint("clash first ", clashFirst), func(t *testing.T) {
			s := newSwarmModel(t, 3, ledgerParams(), six, []uint64{100, 100, 100, 100, 100, 100}, nil, nil, wideTheta0)
			e, a, b := s.node("e"), s.node("a"), s.node("b")
			s.drop, s.manual = dropShards(0, e, a), true
			closeRound0(s)
			var genuine []*verify.Shard
			for _, data := range s.shards[e.id] {
				sh, err := verify.UnmarshalShard(data, maxPayload)
				if err != nil {
					t.Fatal(err)
				}
				if sh.Header.Round == 0 {
					genuine = append(genuine, sh)
				}
			}
			if len(genuine) < 2 {
				t.Fatalf("e's contribution has %d shards: the test needs two or more", len(genuine))
			}
			slices.SortFunc(genuine, func(x, y *verify.Shard) int { return int(x.Header.Index) - int(y.Header.Index) })
			h := genuine[1].Header
			h.Index = 0
			clash, err := verify.SignShard(s.fx.Key("e"), h, genuine[1].Payload)
			if err != nil {
				t.Fatal(err)
			}
			give := func(sh *verify.Shard) {
				t.Helper()
				data, err := sh.Marshal()
				if err != nil {
					t.Fatal(err)
				}
				s.deliver(delivery{from: e, to: a, msg: core.Message{Kind: core.KindShards, Data: data}, fetch: true})
				s.flush()
			}
			order := []*verify.Shard{genuine[0], clash}
			if clashFirst {
				order = []*verify.Shard{clash, genuine[0]}
			}
			for _, sh := range append(order, genuine[2:]...) {
				give(sh)
			}
			if len(a.repairs) != 0 {
				t.Fatalf("a repaired %d times with e's second payload under index 0", len(a.repairs))
			}
			asked := slices.ContainsFunc(a.fetch, func(w core.Want) bool {
				return bytes.Equal(w.CID, genuine[1].Header.PayloadCID) && slices.Equal(w.Taken, []uint32{0})
			})
			if ag := a.core.Agreement(); !asked || ag.Agrees || ag.Waiting != 1 {
				t.Fatalf("a asked again for the clashing CID with index 0 taken: %v; agreement %+v: want it waiting for one shard", asked, ag)
			}
			give(genuine[1])
			weights := map[string]float64{}
			for _, n := range s.nodes {
				weights[n.id] = 1
			}
			ref := s.referenceState(b, weights)
			if len(a.repairs) == 0 || !bytes.Equal(stateBits(a.core.State()), stateBits(ref)) || !a.core.Agreement().Agrees {
				t.Fatalf("a repaired %d times, agreement %+v: want it at the six-contribution state", len(a.repairs), a.core.Agreement())
			}
		})
	}
}

// wideTheta0 is theta0 with a dense vector whose codes alone outgrow one shard: a
// contribution of several shards.
func wideTheta0() []training.Tensor {
	return append(theta0(), training.Tensor{Name: "v", Shape: []int{6000}, Data: make([]float64, 6000)})
}
