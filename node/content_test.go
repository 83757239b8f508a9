package node

import (
	"testing"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
	"github.com/lowband/lowband/node/core"
	"github.com/lowband/lowband/node/store"
	"github.com/lowband/lowband/verify"
)

func marshalShard(t testing.TB, s *verify.Shard) []byte {
	t.Helper()
	out, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestContentStoreKeepsRecentRoundsOnce: a shard is new once; another shard for a held
// slot is new but not kept; over the byte bound the oldest round goes first and a shard
// older than everything held is not kept; prune drops closed rounds.
func TestContentStoreKeepsRecentRoundsOnce(t *testing.T) {
	fx := incentivestest.New("net-a", "run-a")
	b := fx.Bundle("alice", "")
	shard := func(round uint64, index uint32, payload string) ([]byte, slot) {
		s := fx.Shard("alice", b, round, index, []byte(payload))
		return marshalShard(t, s), slotOf(&s.Header)
	}
	one, _ := shard(1, 0, "p")
	c := newContentStore(3 * len(one))
	put := func(round uint64, index uint32, payload string) putResult {
		data, _ := shard(round, index, payload)
		s := fx.Shard("alice", b, round, index, []byte(payload))
		return c.put(s, data)
	}
	if put(1, 0, "p") != putNew || put(1, 0, "p") != putSame {
		t.Fatal("a shard must be new once")
	}
	if put(1, 0, "q") != putConflict || put(1, 0, "r") != putRepeated {
		t.Fatal("another shard for a held slot (equivocation) must be a conflict once")
	}
	if data, k := shard(1, 0, "p"); string(c.shard(k)) != string(data) {
		t.Fatal("the first shard of a slot is the one kept")
	}
	put(2, 0, "p")
	put(3, 0, "p")
	put(4, 0, "p") // over the bound: round 1 goes
	if _, k := shard(1, 0, "p"); c.shard(k) != nil {
		t.Fatal("the oldest round was kept over the bound")
	}
	if put(0, 0, "p"); c.bytes > c.maxBytes {
		t.Fatalf("%d bytes held, bound %d", c.bytes, c.maxBytes)
	}
	c.prune(4)
	for r := range uint64(4) {
		if _, k := shard(r, 0, "p"); c.shard(k) != nil {
			t.Fatalf("round %d kept after prune", r)
		}
	}
	data, k := shard(4, 0, "p")
	s := fx.Shard("alice", b, 4, 0, []byte("p"))
	if _, _, held := c.held(4, s.Header.Peer, s.Header.PayloadCID); string(c.shard(k)) != string(data) || string(held) != string(data) {
		t.Fatalf("round 4 not served by slot and CID (%d bytes held)", c.bytes)
	}
}

// TestContentOfTheRepairWindowKept: with a repair depth deeper than keepRounds, the
// shards of every round open to repair, and as many rounds before them for peers that
// far behind, stay served as rounds close; older ones go.
func TestContentOfTheRepairWindowKept(t *testing.T) {
	ft := newFullTest(t, 16, nil)
	b := ft.fx.Bundle("alice", "")
	var cids [][]byte
	for r := range uint64(8) {
		s := ft.fx.Shard("alice", b, r, 0, []byte{byte(r)})
		ft.f.content.put(s, marshalShard(t, s))
		cids = append(cids, s.Header.PayloadCID)
	}
	ft.f.setView(core.View{NextClose: 16, NextLocal: 17, Window: 2, RepairFrom: 10}) // a repair depth of 6
	for r, cid := range cids {
		if _, _, data := ft.f.content.held(uint64(r), incentivestest.PeerID("alice"), cid); (data != nil) != (r >= 4) {
			held := data != nil
			t.Errorf("round %d: held %v with rounds 10 to 15 open to repair", r, held)
		}
	}
}

// TestOnePayloadInManySlots: shards of several slots may carry one payload (a peer that
// sends the same update in two rounds, a copy of another peer's). Each stays found by its
// round, signer and CID, for the commit of its round and for a repair's fetch, whatever
// the order they came in and after another is dropped.
func TestOnePayloadInManySlots(t *testing.T) {
	fx := incentivestest.New("net-a", "run-a")
	alice, bob := fx.Bundle("alice", ""), fx.Bundle("bob", "")
	payload := []byte("the same update")
	shards := []*verify.Shard{
		fx.Shard("alice", alice, 8, 0, payload),
		fx.Shard("alice", alice, 9, 0, payload),
		fx.Shard("bob", bob, 8, 0, payload), // bob copied alice's round-8 update
	}
	cid := shards[0].Header.PayloadCID
	for _, order := range [][]int{{0, 1, 2}, {2, 1, 0}, {1, 2, 0}} {
		c := newContentStore(0)
		for _, i := range order {
			if r := c.put(shards[i], marshalShard(t, shards[i])); r != putNew {
				t.Fatalf("order %v: shard %d: %v", order, i, r)
			}
		}
		for _, s := range shards {
			index, _, data := c.held(s.Header.Round, s.Header.Peer, cid)
			if string(data) != string(marshalShard(t, s)) || index != s.Header.Index {
				t.Fatalf("order %v: round %d of %s not found by its CID", order, s.Header.Round, s.Header.Peer[:8])
			}
		}
		rec := &incentives.Record{Round: 8, Contributions: []incentives.Contribution{
			{Peer: shards[0].Header.Peer, Shards: [][]byte{cid}},
			{Peer: shards[2].Header.Peer, Shards: [][]byte{cid}},
		}}
		got, missing := committedShards(rec, c, nil)
		if missing != 0 || len(got) != 2 || got[0].Peer != shards[0].Header.Peer || got[1].Peer != shards[2].Header.Peer {
			t.Fatalf("order %v: round 8 committed with %d shards, %d missing", order, len(got), missing)
		}
		// What the content store lacks comes from the shards stored with the round, by
		// signer and CID; a stored shard filed under another peer than its header's is not
		// taken.
		stored := []store.Shard{
			{Peer: shards[2].Header.Peer, Index: 0, Data: marshalShard(t, shards[0])}, // alice's, filed as bob's
			{Peer: shards[0].Header.Peer, Index: 0, Data: marshalShard(t, shards[0])},
		}
		if got, missing := committedShards(rec, newContentStore(0), stored); missing != 1 || len(got) != 1 || string(got[0].Data) != string(marshalShard(t, shards[0])) {
			t.Fatalf("order %v: from the stored shards, %d taken and %d missing; want alice's and bob's missing", order, len(got), missing)
		}
		c.prune(9) // round 8 goes; round 9 stays found
		if _, _, data := c.held(9, shards[1].Header.Peer, cid); data == nil {
			t.Fatalf("order %v: round 9 lost with round 8", order)
		}
		if _, _, data := c.held(8, shards[2].Header.Peer, cid); data != nil || len(c.byCID) != 1 {
			t.Fatalf("order %v: a pruned slot still indexed", order)
		}
	}
}
