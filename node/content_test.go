package node

import (
	"testing"

	"github.com/lowband/lowband/incentives/incentivestest"
	"github.com/lowband/lowband/node/core"
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
	if string(c.shard(k)) != string(data) || string(c.byPayload(s.Header.PayloadCID)) != string(data) {
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
		if held := ft.f.content.byPayload(cid) != nil; held != (r >= 4) {
			t.Errorf("round %d: held %v with rounds 10 to 15 open to repair", r, held)
		}
	}
}
