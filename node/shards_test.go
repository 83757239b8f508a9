package node

import (
	"bytes"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
	"github.com/lowband/lowband/node/core"
	"github.com/lowband/lowband/node/store"
	"github.com/lowband/lowband/verify"
)

// TestRepairKeepsTheShardsStoredWithItsRound: a round a catch-up closed again is stored
// with the shards it fetched, which never pass through the content store. A repair that
// closes it again with the same contributions keeps those shards (roundShards), so that
// a restart or a resync can still replay it; with neither the content store nor the store
// holding them, the round is stored without them.
func TestRepairKeepsTheShardsStoredWithItsRound(t *testing.T) {
	fx := incentivestest.New("testnet", "run-1")
	alice := fx.Bundle("P1", "")
	sh := fx.Shard("P1", alice, 0, 0, []byte("an update"))
	data := marshalShard(t, sh)
	st, cur := stakedStore(t, sh.Header.Peer, incentivestest.PeerID("P2"))
	cl, err := cur.Build([]incentives.Contribution{{Peer: sh.Header.Peer, Shards: [][]byte{sh.Header.PayloadCID}}}, nil, []byte("model"), fx.Checker())
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Commit(cl.Record, cl.State, cl.Events, store.Shard{Peer: sh.Header.Peer, Index: 0, Data: data}); err != nil {
		t.Fatal(err)
	}
	key, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	n := &Node{log: slog.New(slog.DiscardHandler), ledger: &ledger{st: st}, checks: &fullChecks{content: newContentStore(0)},
		network: "testnet", opts: Options{Spec: &configs.Spec{Run: "run-1"}}}
	repair := func() []store.Shard {
		t.Helper()
		rp := &core.Repair{From: 0, Commits: []*core.Commit{{Record: cl.Record, State: cl.State, Events: cl.Events}}}
		if err := n.repairRounds(rp, key); err != nil {
			t.Fatal(err)
		}
		got, err := st.Shards(0)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := repair(); len(got) != 1 || !bytes.Equal(got[0].Data, data) {
		t.Fatalf("after the repair the round holds %d shards, want its one", len(got))
	}
	if got := repair(); len(got) != 1 { // and again: what the first repair stored
		t.Fatalf("after a second repair the round holds %d shards, want its one", len(got))
	}
	if err := st.Reorg(0, store.Round{Record: cl.Record, State: cl.State, Events: cl.Events}); err != nil {
		t.Fatal(err)
	}
	if got := repair(); len(got) != 0 {
		t.Fatalf("with the shards held nowhere the round holds %d", len(got))
	}
}

// TestCommitTakesOnlyShardsOfTheContribution: a contributor that signs its payload again in
// another slot of its own (index 1 of 2, where the record lists one shard) cannot make the
// commit take that shard, which the store would refuse, stopping the node's loop: the
// commit takes the contribution's own shard, or counts it missing.
func TestCommitTakesOnlyShardsOfTheContribution(t *testing.T) {
	fx := incentivestest.New("testnet", "run-1")
	alice := fx.Bundle("P1", "")
	real := fx.Shard("P1", alice, 3, 0, []byte("an update"))
	h := real.Header
	h.Index, h.Count = 1, 2
	again, err := verify.SignShard(fx.Key("P1"), h, []byte("an update"))
	if err != nil {
		t.Fatal(err)
	}
	rec := &incentives.Record{Round: 3, Contributions: []incentives.Contribution{{Peer: h.Peer, Shards: [][]byte{h.PayloadCID}}}}
	for _, order := range [][]*verify.Shard{{real, again}, {again, real}} {
		c := newContentStore(0)
		for _, s := range order {
			c.put(s, marshalShard(t, s))
		}
		got, missing := committedShards(rec, c, nil)
		if missing+len(got) != 1 || len(got) == 1 && (got[0].Index != 0 || !bytes.Equal(got[0].Data, marshalShard(t, real))) {
			t.Fatalf("first %d of %d: %d shards taken (%+v), %d missing; want the real one or none", order[0].Header.Index, order[0].Header.Count, len(got), got, missing)
		}
		// With the real one stored with the round, the commit has it whatever came first.
		stored := []store.Shard{{Peer: h.Peer, Index: 0, Data: marshalShard(t, real)}}
		if got, missing := committedShards(rec, c, stored); missing != 0 || len(got) != 1 || got[0].Index != 0 {
			t.Fatalf("first %d of %d, with the stored shard: %d taken, %d missing", order[0].Header.Index, order[0].Header.Count, len(got), missing)
		}
	}
}

// TestStoredShardServedBySigner: a round may hold one payload under two signers (bob
// copied alice's update). A late joiner asks for a stored shard by round, signer and CID,
// and gets that signer's, whichever sorts first in the store.
func TestStoredShardServedBySigner(t *testing.T) {
	fx := incentivestest.New("testnet", "run-1")
	a := fx.Shard("P1", fx.Bundle("P1", ""), 0, 0, []byte("an update"))
	b := fx.Shard("P2", fx.Bundle("P2", ""), 0, 0, []byte("an update"))
	st, cur := stakedStore(t, a.Header.Peer, b.Header.Peer)
	cid := a.Header.PayloadCID
	cl, err := cur.Build([]incentives.Contribution{{Peer: a.Header.Peer, Shards: [][]byte{cid}}, {Peer: b.Header.Peer, Shards: [][]byte{cid}}}, nil, []byte("model"), fx.Checker())
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Commit(cl.Record, cl.State, cl.Events, store.Shard{Peer: a.Header.Peer, Data: marshalShard(t, a)}, store.Shard{Peer: b.Header.Peer, Data: marshalShard(t, b)}); err != nil {
		t.Fatal(err)
	}
	srv := storedRounds{st: st, maxPayload: 1 << 20}
	for _, s := range []*verify.Shard{a, b} {
		if got := srv.shard(0, s.Header.Peer, cid); !bytes.Equal(got, marshalShard(t, s)) {
			t.Fatalf("the stored shard of %s: %d bytes, not its own", s.Header.Peer[:12], len(got))
		}
	}
	if got := srv.shard(0, incentivestest.PeerID("P3"), cid); got != nil {
		t.Fatal("a shard served for a signer that sent none")
	}
}

// stakedStore opens a store in a test directory at the genesis of peers, each staked 1000,
// and returns it with its ledger state.
func stakedStore(t *testing.T, peers ...string) (*store.Store, *incentives.State) {
	t.Helper()
	stakes := map[string]uint64{}
	for _, p := range peers {
		stakes[p] = 1000
	}
	g, err := store.GenesisFromSpec(configs.IncentivesSpec{
		Stakes: stakes, MinStake: 100, Reward: 10, JailRounds: 2, UnstakedWeight: 0.25, EvidenceWindow: 3,
	})
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(filepath.Join(t.TempDir(), "store.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Init(g); err != nil {
		t.Fatal(err)
	}
	cur, err := st.State()
	if err != nil {
		t.Fatal(err)
	}
	return st, cur
}
