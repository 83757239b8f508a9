package node

import (
	"bytes"
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
	"github.com/lowband/lowband/node/core"
	"github.com/lowband/lowband/p2p"
)

// newVoteTest is an announceTest whose ledger and view are newRecordTest's: alice and bob
// vote, records of rounds 7 to 11 are in the window.
func newVoteTest(t *testing.T, connected ...peer.ID) (*announceTest, *recordBook) {
	led := recordLedger(t)
	book := newRecordBook(0)
	at := newAnnounceTest(t, connected...)
	at.f.cfg.Ledger = func() *incentives.State { return led }
	at.f.setView(core.View{NextClose: 10, NextLocal: 11, Window: 2, RepairFrom: 7})
	at.peers.servers[neighbor] = newFetchServer(at.f.reg, at.served, book)
	return at, book
}

func voteAnnouncementOf(t testing.TB, sr *incentives.SignedRecord) []byte {
	t.Helper()
	a, err := announceVote(sr)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// holdVote has a record book hold a signed record as the validator does.
func holdVote(b *recordBook, sr *incentives.SignedRecord) {
	data := sr.Marshal()
	b.put(recordKey{round: sr.Round, signer: sr.Signer}, sha256.Sum256(data), incentives.RecordDigest(sr.Record), data)
}

// votedIn asserts that the loop got exactly the signed record sr.
func (at *announceTest) votedIn(what string, sr *incentives.SignedRecord) {
	at.t.Helper()
	select {
	case ev := <-at.inbox:
		in, ok := ev.(recordIn)
		if !ok || !bytes.Equal(in.sr.Marshal(), sr.Marshal()) {
			at.t.Fatalf("%s: the loop got %T, not the announced record", what, ev)
		}
	default:
		at.t.Fatalf("%s: nothing reached the loop", what)
	}
}

// TestAnnouncedVoteFetchedFromTheForwarderOrRebuilt: a vote announcement passes once the
// signed record, fetched by digest from the forwarder, is the announced one and passes
// every record check; another signer's vote for the same record is rebuilt from it with no
// fetch; the node serves both.
func TestAnnouncedVoteFetchedFromTheForwarderOrRebuilt(t *testing.T) {
	at, book := newVoteTest(t)
	alice := signRecordAs(t, "alice", at.fx.Network, at.fx.Run, 9, 0)
	holdVote(book, alice)
	ann := voteAnnouncementOf(t, alice)
	if len(ann) > maxVoteAnnouncement || len(ann) >= len(alice.Marshal()) {
		t.Fatalf("announcement of %d bytes for a record of %d", len(ann), len(alice.Marshal()))
	}
	at.expect("alice", p2p.KindRecords, ann, p2p.Accept, reasonOK)
	at.votedIn("alice", alice)
	if at.peers.count(neighbor) != 1 {
		t.Fatalf("the forwarder was asked %d times, want 1", at.peers.count(neighbor))
	}
	bob := signRecordAs(t, "bob", at.fx.Network, at.fx.Run, 9, 0) // the same record
	at.expect("bob, same record", p2p.KindRecords, voteAnnouncementOf(t, bob), p2p.Accept, reasonOK)
	at.votedIn("bob, same record", bob)
	if at.peers.count(neighbor) != 1 {
		t.Fatal("a vote for a record the node holds was fetched")
	}
	for _, sr := range []*incentives.SignedRecord{alice, bob} {
		got := at.f.records.byDigest(recordKey{round: 9, signer: sr.Signer}, incentives.RecordDigest(sr.Record))
		if !bytes.Equal(got, sr.Marshal()) {
			t.Fatalf("the node does not serve %s's vote it passed on", sr.Signer)
		}
	}
}

// TestAnnouncedVoteRefusals: a forged vote announcement is refused before any fetch; a
// record of another digest from the forwarder is Reject; none held is Ignore; an unstaked
// signer's announcement is ignored without a fetch.
func TestAnnouncedVoteRefusals(t *testing.T) {
	alicePeer, err := peer.Decode(incentivestest.PeerID("alice"))
	if err != nil {
		t.Fatal(err)
	}
	at, book := newVoteTest(t, alicePeer)
	alice := signRecordAs(t, "alice", at.fx.Network, at.fx.Run, 9, 0)
	forged := signRecordAs(t, "alice", at.fx.Network, at.fx.Run, 9, 1)
	forged.Sig[0] ^= 1
	at.expect("forged", p2p.KindRecords, voteAnnouncementOf(t, forged), p2p.Reject, reasonSignature)
	at.expect("unstaked", p2p.KindRecords, voteAnnouncementOf(t, signRecordAs(t, "mallory", at.fx.Network, at.fx.Run, 9, 0)), p2p.Ignore, reasonUnstaked)
	at.expect("other run", p2p.KindRecords, voteAnnouncementOf(t, signRecordAs(t, "alice", at.fx.Network, "run-b", 9, 0)), p2p.Reject, reasonSignature)
	if len(at.peers.asked) != 0 {
		t.Fatalf("refused announcements were fetched: %v", at.peers.asked)
	}
	at.expect("none held", p2p.KindRecords, voteAnnouncementOf(t, alice), p2p.Ignore, reasonNotHeld)
	if at.peers.count(neighbor) != 1 || at.peers.count(alicePeer) != 1 {
		t.Fatalf("asked %v, want the forwarder then the connected signer", at.peers.asked)
	}
	// The forwarder serves, for alice's digest, another record of hers.
	other := signRecordAs(t, "alice", at.fx.Network, at.fx.Run, 9, 2)
	data := other.Marshal()
	book.mu.Lock()
	book.held[recordKey{round: 9, signer: alice.Signer}] = heldRecord{digest: incentives.RecordDigest(alice.Record), data: data}
	book.mu.Unlock()
	second := signRecordAs(t, "alice", at.fx.Network, at.fx.Run, 9, 3)
	at.expect("another record", p2p.KindRecords, voteAnnouncementOf(t, second), p2p.Ignore, reasonNotHeld)
	holdVote(book, second)
	book.mu.Lock()
	h := book.held[recordKey{round: 9, signer: alice.Signer}]
	h.digest, h.data = incentives.RecordDigest(second.Record), data
	book.held[recordKey{round: 9, signer: alice.Signer}] = h
	book.mu.Unlock()
	at.expect("a record not of the digest", p2p.KindRecords, voteAnnouncementOf(t, second), p2p.Reject, reasonPayload)
	at.inboxEmpty("refusals")
}

// TestAnnouncedDoubleVoteServedThenThirdIgnored: a signer's second vote for a round passes
// (the node then serves it by digest, so gossip carries it on); a third is ignored before
// any fetch.
func TestAnnouncedDoubleVoteServedThenThirdIgnored(t *testing.T) {
	at, book := newVoteTest(t)
	var votes []*incentives.SignedRecord
	for v := range byte(3) {
		sr := signRecordAs(t, "alice", at.fx.Network, at.fx.Run, 9, v)
		holdVote(book, sr)
		votes = append(votes, sr)
	}
	at.expect("first", p2p.KindRecords, voteAnnouncementOf(t, votes[0]), p2p.Accept, reasonOK)
	at.votedIn("first", votes[0])
	at.expect("second", p2p.KindRecords, voteAnnouncementOf(t, votes[1]), p2p.Accept, reasonOK)
	at.votedIn("second", votes[1])
	got := at.f.records.byDigest(recordKey{round: 9, signer: votes[1].Signer}, incentives.RecordDigest(votes[1].Record))
	if !bytes.Equal(got, votes[1].Marshal()) {
		t.Fatal("the second vote is not served")
	}
	if _, err := incentives.NewRecordEquivocation(votes[0], votes[1]); err != nil {
		t.Fatalf("the two votes make no evidence: %v", err)
	}
	asked := at.peers.count(neighbor)
	at.expect("third", p2p.KindRecords, voteAnnouncementOf(t, votes[2]), p2p.Ignore, reasonSecondRecord)
	if at.peers.count(neighbor) != asked {
		t.Fatal("a third vote was fetched")
	}
	at.inboxEmpty("third")
}

// TestOwnVoteAnnouncedWhenHeld: the node's own vote goes out as an announcement, which
// passes its own validator once the record is held.
func TestOwnVoteAnnouncedWhenHeld(t *testing.T) {
	at, _ := newVoteTest(t)
	sr := signRecordAs(t, "alice", at.fx.Network, at.fx.Run, 9, 0)
	ann := voteAnnouncementOf(t, sr)
	if r := at.vals[p2p.KindRecords](context.Background(), self, ann); r != p2p.Ignore {
		t.Fatalf("own announcement of a record not held: %v", r)
	}
	own, err := at.f.announceOwnVote(sr.Marshal())
	if err != nil || !bytes.Equal(own, ann) {
		t.Fatalf("announceOwnVote: %v", err)
	}
	if r := at.vals[p2p.KindRecords](context.Background(), self, ann); r != p2p.Accept {
		t.Fatalf("own announcement of a held record: %v", r)
	}
}

// FuzzDecodeVoteAnnouncement: the decoder never panics, and what it accepts encodes back
// to the same bytes.
func FuzzDecodeVoteAnnouncement(f *testing.F) {
	entries, _ := os.ReadDir(filepath.Join("testdata", "vote_announcements"))
	for _, e := range entries {
		if b, err := os.ReadFile(filepath.Join("testdata", "vote_announcements", e.Name())); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte{cborMap5})
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := decodeVoteAnnouncement(data)
		if err != nil {
			return
		}
		out, err := announceEnc.Marshal(a)
		if err != nil || !bytes.Equal(out, data) {
			t.Fatalf("accepted bytes that do not encode back: %v", err)
		}
	})
}
