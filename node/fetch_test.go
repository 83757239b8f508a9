package node

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/p2p/p2ptest"
	"github.com/lowband/lowband/verify"
)

func TestFetchRequests(t *testing.T) {
	alice := incentivestest.PeerID("alice")
	for _, r := range []fetchRequest{
		bundleRequest([32]byte{1, 2, 3}),
		cidRequest(1<<40, alice, verify.PayloadCID([]byte("payload"))),
		storedShardRequest(7, alice, verify.PayloadCID([]byte("payload"))),
		slotRequest(slot{round: 1 << 40, peer: alice, index: 7}),
		{kind: fetchManifest, hash: [32]byte{4}},
		{kind: fetchChunk, hash: [32]byte{5}},
		{kind: fetchManifestR, hash: [32]byte{6}},
		committedSameRequest(headRound, [32]byte{9}),
		committedSameRequest(3, [32]byte{8}),
		bodyRequest(4, [32]byte{7}),
		committedDigestRequest(headRound),
		committedDigestRequest(5),
	} {
		got, err := parseFetchRequest(r.marshal())
		if err != nil || string(got.marshal()) != string(r.marshal()) {
			t.Fatalf("kind %d: %+v, %v", r.kind, got, err)
		}
	}
	long := slotRequest(slot{peer: string(bytes.Repeat([]byte("x"), verify.MaxIDLen+1))}).marshal()
	for name, req := range map[string][]byte{
		"empty":             nil,
		"unknown kind":      {9, 1, 2},
		"short hash":        append([]byte{fetchBundle}, make([]byte, 31)...),
		"long hash":         append([]byte{fetchBundle}, make([]byte, 33)...),
		"empty CID":         cidRequest(1, alice, nil).marshal(),
		"CID, no key":       {fetchShardCID},
		"CID without peer":  cidRequest(1, "", verify.PayloadCID(nil)).marshal(),
		"CID past its key":  cidRequest(1, "", verify.PayloadCID(nil)).marshal()[:20],
		"CID of a bad ID":   cidRequest(1, "not a peer", verify.PayloadCID(nil)).marshal(),
		"CID too long":      cidRequest(1, alice, make([]byte, maxFetchCID+1)).marshal(),
		"retired kind 2":    append([]byte{2}, verify.PayloadCID(nil)...),
		"retired kind 9":    append([]byte{9, 0, 0, 0, 0, 0, 0, 0, 3}, verify.PayloadCID(nil)...),
		"short manifest ID": append([]byte{fetchManifest}, make([]byte, 31)...),
		"long chunk hash":   append([]byte{fetchChunk}, make([]byte, 33)...),
		"root without key":  {fetchManifestR},
		"slot without peer": slotRequest(slot{round: 1}).marshal(),
		"slot of a bad ID":  slotRequest(slot{peer: "not a peer"}).marshal(),
		"over the cap":      long,
		"same, short":       committedSameRequest(1, [32]byte{1}).marshal()[:40],
		"same, long":        append(committedSameRequest(1, [32]byte{1}).marshal(), 0),
		"body, short":       bodyRequest(1, [32]byte{1}).marshal()[:40],
		"body, long":        append(bodyRequest(1, [32]byte{1}).marshal(), 0),
	} {
		if _, err := parseFetchRequest(req); !errors.Is(err, ErrBadFetchRequest) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// FuzzFetchRequest: no request makes the decoder panic, and what it accepts encodes back
// to the same bytes (one request has one form).
func FuzzFetchRequest(f *testing.F) {
	f.Add(bundleRequest([32]byte{1}).marshal())
	f.Add(cidRequest(3, incentivestest.PeerID("alice"), verify.PayloadCID(nil)).marshal())
	f.Add(slotRequest(slot{round: 3, peer: incentivestest.PeerID("alice"), index: 2}).marshal())
	f.Add(fetchRequest{kind: fetchManifest, hash: [32]byte{4}}.marshal())
	f.Add(fetchRequest{kind: fetchChunk, hash: [32]byte{5}}.marshal())
	f.Add(fetchRequest{kind: fetchManifestR, hash: [32]byte{6}}.marshal())
	f.Add(recordRequest(3, incentivestest.PeerID("alice")).marshal())
	f.Add(committedRequest(headRound).marshal())
	f.Add(committedSameRequest(headRound, [32]byte{9}).marshal())
	f.Add(storedShardRequest(3, incentivestest.PeerID("alice"), verify.PayloadCID(nil)).marshal())
	f.Add(bodyRequest(3, [32]byte{7}).marshal())
	f.Add(committedDigestRequest(headRound).marshal())
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, req []byte) {
		r, err := parseFetchRequest(req)
		if err != nil {
			if !errors.Is(err, ErrBadFetchRequest) {
				t.Fatalf("error %v is not ErrBadFetchRequest", err)
			}
			return
		}
		if !bytes.Equal(r.marshal(), req) {
			t.Fatalf("%x decodes and encodes to %x", req, r.marshal())
		}
	})
}

// FuzzDigestAnswer: an answer to fetchCommittedDigest is taken only whole, in its form,
// and under its sender's committed signature over its round and digest; anything else is
// an error, never a panic.
func FuzzDigestAnswer(f *testing.F) {
	k, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		f.Fatal(err)
	}
	id, err := peer.IDFromPrivateKey(k)
	if err != nil {
		f.Fatal(err)
	}
	rec := &incentives.Record{Version: incentives.RecordVersion, Round: 4, PrevRoot: bytes.Repeat([]byte{1}, 32), NewRoot: bytes.Repeat([]byte{2}, 32)}
	sr, err := incentives.SignCommitted(k, "net", "run", rec)
	if err != nil {
		f.Fatal(err)
	}
	good := digestOf(sr.Marshal())
	vote, err := incentives.SignRecord(k, "net", "run", rec)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(digestOf(vote.Marshal()))
	f.Add(good[:len(good)-1])
	f.Add(append(slices.Clone(good), 0))
	f.Add([]byte{digestCommitted})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, answer []byte) {
		h, err := parseDigestAnswer(answer, "net", "run", id)
		if err != nil {
			return
		}
		if len(answer) != digestCommittedLen || h.from != id || h.digest != [32]byte(answer[10:42]) {
			t.Fatalf("answer %x taken as %+v", answer, h)
		}
		if incentives.VerifyRecordDigest(answer[1], "net", "run", id.String(), h.round, h.digest, answer[42:]) != nil {
			t.Fatalf("answer %x taken without its signature", answer)
		}
	})
}

// TestFetchRoundTripBetweenHosts: a node fetches a bundle and shards from a peer over
// the fetch protocol of two real hosts; a shard forwarded before its bundle is stashed,
// the bundle fetched from the forwarder, and the shard reaches the loop once; a missing
// slot is fetched and checked like gossip.
func TestFetchRoundTripBetweenHosts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sw, err := p2ptest.Start(ctx, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sw.Close()
	server, client := sw.Boot, sw.Hosts[0]
	if err := p2ptest.Poll(ctx, "the hosts connected", 10*time.Millisecond, func() bool {
		return len(client.ConnectedPeers()) > 0
	}); err != nil {
		t.Fatal(err)
	}

	held := newFullTest(t, 16, nil) // the serving node
	fx := held.fx
	alice := fx.Bundle("alice", "")
	held.holdBundle(alice)
	shards := [][]byte{
		marshalShard(t, fx.Shard("alice", alice, 10, 0, []byte("payload 0"))),
		marshalShard(t, fx.Shard("alice", alice, 10, 1, []byte("payload 1"))),
	}
	for _, s := range shards {
		held.expect("serving node", p2p.KindShards, s, p2p.Accept, reasonOK)
	}
	server.Handle(string(p2p.FetchProtocol(fx.Network)), maxFetchRequest, newFetchServer(held.f.reg, held.f.content, held.f.records).handle)

	fc := newFetchClient(client, fx.Network, held.f.cfg.Wire)
	b, _ := verify.UnmarshalBundle(alice)
	s0, _ := verify.UnmarshalShard(shards[0], 4<<10)
	for name, c := range map[string]struct {
		req  fetchRequest
		want []byte
	}{
		"bundle by hash": {bundleRequest(b.Hash()), alice},
		"shard by CID":   {cidRequest(s0.Header.Round, s0.Header.Peer, s0.Header.PayloadCID), shards[0]},
		"shard by slot":  {slotRequest(slotOf(&s0.Header)), shards[0]},
	} {
		if got, err := fc.fetch(ctx, server.ID(), c.req); err != nil || !bytes.Equal(got, c.want) {
			t.Fatalf("%s: %d bytes, %v", name, len(got), err)
		}
	}
	if _, err := fc.fetch(ctx, server.ID(), bundleRequest([32]byte{9})); !errors.Is(err, errNotHeld) {
		t.Fatalf("unknown bundle: %v", err)
	}
	if _, err := client.Request(ctx, server.ID(), fc.proto, []byte{9}, 100); err == nil {
		t.Fatal("a malformed request was answered")
	}

	ft := newFullTest(t, 16, func(c *fullConfig) { c.Fetch = fc }) // the fetching node
	if r := ft.vals[p2p.KindShards](ctx, server.ID(), shards[0]); r != p2p.Ignore {
		t.Fatalf("shard before its bundle: %v", r)
	}
	ft.f.wg.Wait()
	if len(ft.inbox) != 1 || ft.count(p2p.KindAttest, p2p.Accept, reasonOK) != 1 {
		t.Fatalf("after the bundle fetch: %d events in the inbox", len(ft.inbox))
	}
	if !ft.f.fetchWant(ctx, []peer.ID{client.ID(), server.ID()}, slotOf(&s0.Header)) || len(ft.inbox) != 1 {
		t.Fatalf("a slot already delivered, fetched again: inbox %d, want it once", len(ft.inbox))
	}
	s1, _ := verify.UnmarshalShard(shards[1], 4<<10)
	if !ft.f.fetchWant(ctx, []peer.ID{server.ID()}, slotOf(&s1.Header)) || len(ft.inbox) != 2 {
		t.Fatalf("missing slot fetched: inbox %d", len(ft.inbox))
	}
	for i := range 2 {
		if in := (<-ft.inbox).(shardIn); in.shard.Header.Index != uint32(i) {
			t.Fatalf("inbox %d: index %d", i, in.shard.Header.Index)
		}
	}
}

// TestGossipedShardBeforeItsBundleReachesTheLoop: over real gossip, a shard that arrives
// before its bundle is stashed, the bundle fetched from the neighbour that forwarded the
// shard, and the shard reaches the loop once.
func TestGossipedShardBeforeItsBundleReachesTheLoop(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sw, err := p2ptest.Start(ctx, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sw.Close()
	sender, receiver := sw.Boot, sw.Hosts[0]

	served := newFullTest(t, 16, nil)
	fx := served.fx
	alice := fx.Bundle("alice", "")
	served.holdBundle(alice)
	sender.Handle(string(p2p.FetchProtocol(fx.Network)), maxFetchRequest, newFetchServer(served.f.reg, served.f.content, served.f.records).handle)

	ft := gossipShard(t, ctx, sender, receiver, fx.Network, marshalShard(t, fx.Shard("alice", alice, 10, 0, []byte("payload"))))
	if len(ft.inbox) != 0 || ft.count(p2p.KindShards, p2p.Ignore, reasonBundleUnknown) != 1 || ft.count(p2p.KindAttest, p2p.Accept, reasonOK) != 1 {
		t.Fatalf("inbox %d more; counted: %v stashed, %v bundles fetched", len(ft.inbox),
			ft.count(p2p.KindShards, p2p.Ignore, reasonBundleUnknown), ft.count(p2p.KindAttest, p2p.Accept, reasonOK))
	}
}

// gossipShard starts a receiver's full checks (fetching with its host), subscribes it to
// the shards topic, publishes data from sender once the receiver is in its topic, and
// waits until alice's shard reaches the receiver's loop and every fetch has ended. It
// returns the receiver's checks.
func gossipShard(t *testing.T, ctx context.Context, sender, receiver *p2p.Host, network string, data []byte) *fullTest {
	t.Helper()
	ft := newFullTest(t, 16, func(c *fullConfig) {
		c.Self = receiver.ID()
		c.Fetch = newFetchClient(receiver, network, c.Wire)
	})
	for kind, v := range ft.vals {
		if err := receiver.SetValidator(kind, v); err != nil {
			t.Fatal(err)
		}
	}
	sub, err := receiver.Subscribe(p2p.KindShards)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sub.Cancel)
	if err := p2ptest.Poll(ctx, "the receiver in the sender's shards topic", 10*time.Millisecond, func() bool {
		return slices.Contains(sender.TopicPeers(p2p.KindShards), receiver.ID())
	}); err != nil {
		t.Fatal(err)
	}
	if err := sender.Publish(ctx, p2p.KindShards, data); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-ft.inbox:
		if in, ok := ev.(shardIn); !ok || in.shard.Header.Peer != incentivestest.PeerID("alice") {
			t.Fatalf("inbox got %T", ev)
		}
	case <-ctx.Done():
		t.Fatal("the shard never reached the loop: its bundle was not fetched")
	}
	ft.f.wg.Wait()
	return ft
}

// heldRounds serves one committed record as every round's.
type heldRounds struct{ signed []byte }

func (h heldRounds) committed(uint64) []byte             { return h.signed }
func (h heldRounds) shard(uint64, string, []byte) []byte { return nil }

// TestCommittedShortWhenTheSame: asked for a committed record with the digest of the
// asker's own, a peer that committed the same record answers with its signature alone, from
// which the asker rebuilds exactly the peer's signed record; one that committed another
// record answers with it whole; a short answer of the wrong size, or with no own record,
// stands for nothing; a rebuilt record with a forged signature fails its check.
func TestCommittedShortWhenTheSame(t *testing.T) {
	fx := incentivestest.New("net-a", "run-a")
	mine := signRecordAs(t, "alice", fx.Network, fx.Run, 9, 0)
	theirs := signRecordAs(t, "bob", fx.Network, fx.Run, 9, 0)
	srv := newFetchServer(nil, newContentStore(0), newRecordBook(0))
	srv.rounds = heldRounds{signed: theirs.Marshal()}
	ask := func(r uint64, digest [32]byte) []byte {
		out, err := srv.handle(context.Background(), self, committedSameRequest(r, digest).marshal())
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, r := range []uint64{headRound, 9} {
		short := ask(r, incentives.RecordDigest(mine.Record))
		if len(short) != shortCommittedLen {
			t.Fatalf("round %d: a peer with the same record answered %d bytes, want %d", r, len(short), shortCommittedLen)
		}
		got := fromShort(short, mine, theirs.Signer)
		if !bytes.Equal(got, theirs.Marshal()) {
			t.Fatal("the rebuilt record is not the peer's signed record")
		}
		if sr, _, err := incentives.DecodeSignedRecord(got); err != nil || sr.Verify() != nil {
			t.Fatalf("the rebuilt record does not check: %v", err)
		}
		forged := bytes.Clone(short)
		forged[len(forged)-1] ^= 1
		if sr, _, err := incentives.DecodeSignedRecord(fromShort(forged, mine, theirs.Signer)); err == nil && sr.Verify() == nil {
			t.Fatal("a short answer with a forged signature checks")
		}
		if got := fromShort(short[:len(short)-1], mine, theirs.Signer); got != nil {
			t.Fatal("a short answer of the wrong size was taken")
		}
		if got := fromShort(short, nil, theirs.Signer); got != nil {
			t.Fatal("a short answer was taken with no own record")
		}
	}
	other := signRecordAs(t, "alice", fx.Network, fx.Run, 9, 1)
	if whole := ask(9, incentives.RecordDigest(other.Record)); !bytes.Equal(fromShort(whole, other, theirs.Signer), theirs.Marshal()) {
		t.Fatal("a peer with another record did not answer with it whole")
	}
}
