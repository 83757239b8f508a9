package node

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/verify"
)

// servingPeers answers fetch requests with each peer's fetch server, counting the
// requests each peer got but those for records by round and signer. A peer without a server answers nothing held.
type servingPeers struct {
	mu      sync.Mutex
	servers map[peer.ID]*fetchServer
	asked   map[peer.ID]int
}

func (s *servingPeers) Request(ctx context.Context, to peer.ID, _ string, req []byte, maxResp int) ([]byte, error) {
	s.mu.Lock()
	if len(req) > 0 && req[0] != fetchSignedRecord { // gap fetches of earlier rounds are not counted
		s.asked[to]++
	}
	srv := s.servers[to]
	s.mu.Unlock()
	if srv == nil {
		return nil, nil
	}
	out, err := srv.handle(ctx, self, req)
	if len(out) > maxResp {
		return nil, errors.New("response over its cap")
	}
	return out, err
}

func (s *servingPeers) count(p peer.ID) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.asked[p]
}

// announceTest is a node's full checks fetching from peers, and a store of shards the
// neighbour serves.
type announceTest struct {
	*fullTest
	peers  *servingPeers
	served *contentStore
}

func newAnnounceTest(t *testing.T, connected ...peer.ID) *announceTest {
	served := newContentStore(0)
	sp := &servingPeers{servers: map[peer.ID]*fetchServer{}, asked: map[peer.ID]int{}}
	ft := newFullTest(t, 16, func(c *fullConfig) {
		c.Fetch = &fetchClient{host: sp, maxShard: c.Wire.shardCap(), timeout: payloadFetchTimeout}
		c.Connected = func(p peer.ID) bool {
			for _, q := range connected {
				if p == q {
					return true
				}
			}
			return false
		}
	})
	sp.servers[neighbor] = newFetchServer(ft.f.reg, served, newRecordBook(0))
	return &announceTest{fullTest: ft, peers: sp, served: served}
}

// serve has the neighbour hold a signed shard.
func (at *announceTest) serve(s *verify.Shard) {
	at.t.Helper()
	at.served.put(s, marshalShard(at.t, s))
}

func announcementOf(t testing.TB, s *verify.Shard) []byte {
	t.Helper()
	a, err := announce(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// delivered asserts that the loop got exactly the signed shard s, payload included.
func (at *announceTest) delivered(what string, s *verify.Shard) {
	at.t.Helper()
	select {
	case ev := <-at.inbox:
		in, ok := ev.(shardIn)
		if !ok || !bytes.Equal(marshalShard(at.t, in.shard), marshalShard(at.t, s)) {
			at.t.Fatalf("%s: the loop got %T, not the announced shard with its payload", what, ev)
		}
	default:
		at.t.Fatalf("%s: nothing reached the loop", what)
	}
}

// TestAnnouncedShardFetchedOnceFromTheForwarder: an announcement passes once its payload,
// fetched by CID from the neighbour that forwarded it, is the announced one and the shard
// passes every check; the loop gets the whole signed shard, the node then serves it, and
// the announcement seen again costs no second fetch.
func TestAnnouncedShardFetchedOnceFromTheForwarder(t *testing.T) {
	at := newAnnounceTest(t)
	alice := at.fx.Bundle("alice", "")
	at.holdBundle(alice)
	s := at.fx.Shard("alice", alice, 10, 0, []byte("payload"))
	at.serve(s)
	ann := announcementOf(t, s)
	if len(ann) >= len(marshalShard(t, s)) || len(ann) > maxAnnouncement {
		t.Fatalf("announcement of %d bytes for a shard of %d", len(ann), len(marshalShard(t, s)))
	}
	at.expect("announced", p2p.KindShards, ann, p2p.Accept, reasonOK)
	at.delivered("announced", s)
	if n := at.peers.count(neighbor); n != 1 {
		t.Fatalf("the forwarder was asked %d times, want 1", n)
	}
	if got := at.f.content.byPayload(s.Header.PayloadCID); !bytes.Equal(got, marshalShard(t, s)) {
		t.Fatal("the node does not serve the shard whose announcement it passed")
	}
	at.expect("announced again", p2p.KindShards, ann, p2p.Accept, reasonOK)
	if n := at.peers.count(neighbor); n != 1 {
		t.Fatalf("the forwarder was asked %d times after a repeat, want 1", n)
	}
	at.inboxEmpty("announced again")
}

// TestAnnouncedPayloadNotTheAnnouncedOneRejected: a forwarder that serves a payload other
// than the announced one (a valid shard of another payload) gets Reject, and nothing
// reaches the loop; one that holds nothing gets Ignore.
func TestAnnouncedPayloadNotTheAnnouncedOneRejected(t *testing.T) {
	at := newAnnounceTest(t)
	alice := at.fx.Bundle("alice", "")
	at.holdBundle(alice)
	s := at.fx.Shard("alice", alice, 10, 0, []byte("payload"))
	ann := announcementOf(t, s)
	at.expect("nothing served", p2p.KindShards, ann, p2p.Ignore, reasonNotHeld)
	at.inboxEmpty("nothing served")

	// The neighbour serves, under the announced CID, a shard of another payload.
	other := at.fx.Shard("alice", alice, 11, 0, []byte("other payload"))
	data := marshalShard(t, other)
	at.served.mu.Lock()
	at.served.bySlot[slotOf(&other.Header)] = heldShard{data: data, cid: string(s.Header.PayloadCID)}
	at.served.byCID[string(s.Header.PayloadCID)] = slotOf(&other.Header)
	at.served.mu.Unlock()
	s2 := at.fx.Shard("alice", alice, 10, 0, []byte("payload"))
	ann2 := announcementOf(t, s2)
	if !bytes.Equal(ann, ann2) {
		t.Fatal("test setup: one shard, two announcements")
	}
	at.expect("another payload", p2p.KindShards, ann, p2p.Reject, reasonPayload)
	at.inboxEmpty("another payload")
}

// TestForgedAnnouncementFetchesNothing: an announcement not signed by the key the named
// peer's bundle attests is refused before any fetch, so a forwarder cannot make the node
// ask anyone, the named signer included, for payloads it never signed.
func TestForgedAnnouncementFetchesNothing(t *testing.T) {
	alicePeer, err := peer.Decode(incentivestest.PeerID("alice"))
	if err != nil {
		t.Fatal(err)
	}
	at := newAnnounceTest(t, alicePeer)
	alice := at.fx.Bundle("alice", "")
	at.holdBundle(alice)
	forged, err := verify.UnmarshalShard(signedAs(t, at.fx, at.fx.Key("mallory"), alice, "alice", 10, "fresh"), 4<<10)
	if err != nil {
		t.Fatal(err)
	}
	at.expect("forged", p2p.KindShards, announcementOf(t, forged), p2p.Reject, reasonSignature)
	if at.peers.count(neighbor) != 0 || at.peers.count(alicePeer) != 0 {
		t.Fatalf("a forged announcement made the node fetch: %v", at.peers.asked)
	}
}

// TestUnservedAnnouncementFetchedBySlot: an announcement no source served is ignored
// (gossip will not deliver it again), and its slot is fetched off the validator from the
// topic's peers, so the shard still reaches the loop.
func TestUnservedAnnouncementFetchedBySlot(t *testing.T) {
	holder := peer.ID("holder")
	at := newAnnounceTest(t)
	at.f.cfg.Peers = func() []peer.ID { return []peer.ID{neighbor, holder} }
	alice := at.fx.Bundle("alice", "")
	at.holdBundle(alice)
	s := at.fx.Shard("alice", alice, 10, 0, []byte("payload"))
	held := newContentStore(0)
	held.put(s, marshalShard(t, s))
	at.peers.servers[holder] = newFetchServer(at.f.reg, held, newRecordBook(0))
	at.expect("unserved", p2p.KindShards, announcementOf(t, s), p2p.Ignore, reasonNotHeld)
	at.f.wg.Wait()
	at.delivered("fetched by slot", s)
	if at.peers.count(holder) != 1 {
		t.Fatalf("asked %v, want the holder once", at.peers.asked)
	}
}

// TestAnnouncedShardFromTheSignerWhenTheForwarderFails: when the forwarder holds nothing,
// the connected signer of a well-signed announcement is asked.
func TestAnnouncedShardFromTheSignerWhenTheForwarderFails(t *testing.T) {
	alicePeer, err := peer.Decode(incentivestest.PeerID("alice"))
	if err != nil {
		t.Fatal(err)
	}
	at := newAnnounceTest(t, alicePeer)
	alice := at.fx.Bundle("alice", "")
	at.holdBundle(alice)
	s := at.fx.Shard("alice", alice, 10, 0, []byte("payload"))
	signerHeld := newContentStore(0)
	signerHeld.put(s, marshalShard(t, s))
	at.peers.servers[alicePeer] = newFetchServer(at.f.reg, signerHeld, newRecordBook(0))
	at.expect("from the signer", p2p.KindShards, announcementOf(t, s), p2p.Accept, reasonOK)
	at.delivered("from the signer", s)
	if at.peers.count(neighbor) != 1 || at.peers.count(alicePeer) != 1 {
		t.Fatalf("asked %v, want the forwarder then the signer once each", at.peers.asked)
	}
}

// TestAnnouncedEquivocationProvedAndServed: of two announcements for one slot, both pass
// (the loop gets both whole shards, which prove the equivocation) and the node serves both
// by CID; a third is ignored before any fetch.
func TestAnnouncedEquivocationProvedAndServed(t *testing.T) {
	at := newAnnounceTest(t)
	alice := at.fx.Bundle("alice", "")
	at.holdBundle(alice)
	var shards []*verify.Shard
	for _, p := range []string{"one", "two", "three"} {
		s := at.fx.Shard("alice", alice, 10, 0, []byte(p))
		at.serve(s)
		shards = append(shards, s)
	}
	third := shards[2] // the neighbour's store keeps the first and the first other of a slot

	at.expect("first", p2p.KindShards, announcementOf(t, shards[0]), p2p.Accept, reasonOK)
	at.delivered("first", shards[0])
	at.expect("second", p2p.KindShards, announcementOf(t, shards[1]), p2p.Accept, reasonOK)
	at.delivered("second", shards[1])
	for _, s := range shards[:2] {
		if got := at.f.content.byPayload(s.Header.PayloadCID); !bytes.Equal(got, marshalShard(t, s)) {
			t.Fatalf("the node does not serve the shard of payload %q it passed on", s.Payload)
		}
	}
	asked := at.peers.count(neighbor)
	at.expect("third", p2p.KindShards, announcementOf(t, third), p2p.Ignore, reasonEquivocation)
	if at.peers.count(neighbor) != asked {
		t.Fatal("a third shard for the slot was fetched")
	}
	at.inboxEmpty("third")
	ev := incentives.NewEquivocation(alice, signedHeaderOf(shards[0]), signedHeaderOf(shards[1]))
	if _, err := at.fx.Checker().Check(ev); err != nil {
		t.Fatalf("the two announcements do not prove the equivocation: %v", err)
	}
}

// TestAnnouncedBadContentBecomesEvidence: an announced shard whose payload fails the
// content checks is refused once fetched and becomes evidence, as a gossiped one does.
func TestAnnouncedBadContentBecomesEvidence(t *testing.T) {
	at := newAnnounceTest(t)
	alice := at.fx.Bundle("alice", "")
	at.holdBundle(alice)
	bad := at.fx.Shard("alice", alice, 10, 0, []byte("bad payload"))
	at.serve(bad)
	at.expect("bad content", p2p.KindShards, announcementOf(t, bad), p2p.Reject, reasonContent)
	at.f.wg.Wait()
	at.wantEvidence(t, "bad content", true, incentives.KindInvalidContent)
}

// TestAnnouncementRefusals: what the wire check refuses, and the node's own announcement
// passes only when it holds the shard.
func TestAnnouncementRefusals(t *testing.T) {
	at := newAnnounceTest(t)
	alice := at.fx.Bundle("alice", "")
	at.holdBundle(alice)
	s := at.fx.Shard("alice", alice, 10, 0, []byte("payload"))
	ann := announcementOf(t, s)
	long := append([]byte{cborMap3}, make([]byte, maxAnnouncement)...)
	at.expect("oversized", p2p.KindShards, long, p2p.Reject, reasonSize)
	at.expect("truncated", p2p.KindShards, ann[:len(ann)-2], p2p.Reject, reasonDecode)
	at.expect("closed round", p2p.KindShards, announcementOf(t, at.fx.Shard("alice", alice, 9, 0, []byte("payload"))), p2p.Ignore, reasonLate)
	if r := at.vals[p2p.KindShards](context.Background(), self, ann); r != p2p.Ignore {
		t.Fatalf("own announcement of a shard not held: %v", r)
	}
	own, err := at.f.announceOwn(marshalShard(t, s))
	if err != nil || !bytes.Equal(own, ann) {
		t.Fatalf("announceOwn: %v", err)
	}
	if r := at.vals[p2p.KindShards](context.Background(), self, ann); r != p2p.Accept {
		t.Fatalf("own announcement of a held shard: %v", r)
	}
	if at.peers.count(neighbor) != 0 {
		t.Fatal("a refused announcement was fetched")
	}
}

func signedHeaderOf(s *verify.Shard) incentives.SignedHeader {
	return incentives.SignedHeader{Header: s.Header, Sig: s.Sig}
}

// FuzzDecodeAnnouncement: the announcement decoder never panics, and what it accepts it
// encodes back to the same bytes.
func FuzzDecodeAnnouncement(f *testing.F) {
	entries, _ := os.ReadDir(filepath.Join("testdata", "announcements"))
	for _, e := range entries {
		if b, err := os.ReadFile(filepath.Join("testdata", "announcements", e.Name())); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte{cborMap3})
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := decodeAnnouncement(data)
		if err != nil {
			return
		}
		out, err := announceEnc.Marshal(a)
		if err != nil || !bytes.Equal(out, data) {
			t.Fatalf("accepted bytes that do not encode back: %v", err)
		}
	})
}
