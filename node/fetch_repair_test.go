package node

import (
	"context"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/incentives/incentivestest"
	"github.com/lowband/lowband/node/core"
	"github.com/lowband/lowband/p2p"
)

// cidPeer answers fetch requests by payload CID from a map, counting them.
type cidPeer struct {
	shards map[string][]byte // by CID
	asked  int
}

func (p *cidPeer) Request(_ context.Context, _ peer.ID, _ string, req []byte, _ int) ([]byte, error) {
	r, err := parseFetchRequest(req)
	if err != nil {
		return nil, err
	}
	p.asked++
	return p.shards[string(r.cid)], nil
}

// TestShardOfAClosedRoundTakenOnlyWhenARepairAsks: a shard of a round the node closed is
// late by gossip, but fetched by its CID for a repair it passes and reaches the loop
// marked as a repair's, when its round is not older than RepairFrom; an answer that is
// another shard than the one asked for is refused; a round before RepairFrom is late.
func TestShardOfAClosedRoundTakenOnlyWhenARepairAsks(t *testing.T) {
	fx := incentivestest.New("net-a", "run-a")
	alice := fx.Bundle("alice", "")
	wanted := fx.Shard("alice", alice, 8, 0, []byte("wanted"))
	other := fx.Shard("alice", alice, 8, 1, []byte("other"))
	old := fx.Shard("alice", alice, 6, 0, []byte("old"))
	served := &cidPeer{shards: map[string][]byte{
		string(wanted.Header.PayloadCID): marshalShard(t, wanted),
		string(other.Header.PayloadCID):  marshalShard(t, wanted), // not what its CID names
		string(old.Header.PayloadCID):    marshalShard(t, old),
	}}
	ft := newFullTest(t, 16, func(c *fullConfig) {
		c.Fetch = &fetchClient{host: served, maxShard: c.Wire.shardCap(), timeout: time.Second}
	})
	ft.holdBundle(alice)
	ft.f.setView(core.View{NextClose: 10, NextLocal: 11, Window: 2, RepairFrom: 7})
	ft.expect("the shard by gossip", p2p.KindShards, marshalShard(t, wanted), p2p.Ignore, reasonLate)
	ft.inboxEmpty("the shard by gossip")

	ctx := context.Background()
	if ft.f.fetchCID(ctx, repairWant{round: 8, peer: other.Header.Peer, cid: other.Header.PayloadCID, peers: []peer.ID{neighbor}}) {
		t.Fatal("an answer that is another shard than the one asked for was taken")
	}
	if ft.count(p2p.KindShards, p2p.Reject, reasonDecode) != 1 {
		t.Fatal("the wrong answer was not counted as refused")
	}
	// The same payload under another signer (a copy of alice's update) is not the shard
	// asked for either.
	if ft.f.fetchCID(ctx, repairWant{round: 8, peer: incentivestest.PeerID("bob"), cid: wanted.Header.PayloadCID, peers: []peer.ID{neighbor}}) {
		t.Fatal("another signer's shard of the payload asked for was taken")
	}
	if ft.count(p2p.KindShards, p2p.Reject, reasonDecode) != 2 {
		t.Fatal("another signer's shard was not counted as refused")
	}
	if ft.f.fetchCID(ctx, repairWant{round: 6, peer: old.Header.Peer, cid: old.Header.PayloadCID, peers: []peer.ID{neighbor}}) {
		t.Fatal("a shard of a round before RepairFrom was taken")
	}
	ft.inboxEmpty("refused answers")
	if !ft.f.fetchCID(ctx, repairWant{round: 8, peer: wanted.Header.Peer, cid: wanted.Header.PayloadCID, peers: []peer.ID{self, neighbor}}) {
		t.Fatal("the wanted shard of a closed round inside the repair window was not taken")
	}
	in := (<-ft.inbox).(shardIn)
	if !in.repair || in.shard.Header.Round != 8 || in.shard.Header.Index != 0 {
		t.Fatalf("inbox got round %d index %d, repair %v", in.shard.Header.Round, in.shard.Header.Index, in.repair)
	}
	// Held now: asked again, it comes from the content store, not a peer.
	asked := served.asked
	if !ft.f.fetchCID(ctx, repairWant{round: 8, peer: wanted.Header.Peer, cid: wanted.Header.PayloadCID, peers: []peer.ID{neighbor}}) || served.asked != asked {
		t.Fatalf("a held shard was fetched again (%d requests, %d before)", served.asked, asked)
	}
	<-ft.inbox
}
