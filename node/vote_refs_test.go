package node

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
	"github.com/lowband/lowband/node/core"
	"github.com/lowband/lowband/p2p"
)

// bodyPeers serve records by digest (fetchRecordBody) as each peer holds them, and count
// the asks.
type bodyPeers struct {
	mu    sync.Mutex
	holds map[peer.ID][]byte // the record each peer sends, whatever the digest asked
	asked []peer.ID
	gate  chan struct{} // when set, answers wait for it to close
}

func (p *bodyPeers) Request(_ context.Context, to peer.ID, _ string, req []byte, _ int) ([]byte, error) {
	r, err := parseFetchRequest(req)
	if err != nil || r.kind != fetchRecordBody {
		return nil, err
	}
	if p.gate != nil {
		<-p.gate
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asked = append(p.asked, to)
	return p.holds[to], nil
}

func (p *bodyPeers) asks() []peer.ID {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]peer.ID(nil), p.asked...)
}

// votesFor signs one record of round r (variant tells records apart) as each of signers:
// the votes share the record's digest.
func votesFor(t testing.TB, network, run string, r uint64, variant byte, signers ...string) []*incentives.SignedRecord {
	t.Helper()
	out := make([]*incentives.SignedRecord, len(signers))
	for i, s := range signers {
		out[i] = signRecordAs(t, s, network, run, r, variant)
	}
	return out
}

// takeRecords drains the inbox, waiting for the jobs in flight, and returns the votes by
// signer.
func takeRecords(t *testing.T, ft *fullTest) map[string]recordIn {
	t.Helper()
	ft.f.wg.Wait()
	got := map[string]recordIn{}
	for len(ft.inbox) > 0 {
		in := (<-ft.inbox).(recordIn)
		if _, twice := got[in.sr.Signer]; twice {
			t.Fatalf("%s's vote reached the loop twice", in.sr.Signer)
		}
		got[in.sr.Signer] = in
	}
	return got
}

// TestVoteRefOfAHeldRecordIsTheWholeVote: a reference whose record the node holds (its
// own vote for the round) reaches the loop as the signed record it stands for, byte for
// byte; the same vote whole afterwards is the same vote (no second delivery, no double
// vote), and the node's own vote goes out as a reference it checks and serves.
func TestVoteRefOfAHeldRecordIsTheWholeVote(t *testing.T) {
	ft := newRecordTest(t, 16, nil)
	fx := ft.fx
	v := votesFor(t, fx.Network, fx.Run, 9, 0, "alice", "bob")
	out := ft.f.outgoing(p2p.KindRecords, v[0].Marshal())
	if len(out) > 256 || bytes.Equal(out, v[0].Marshal()) {
		t.Fatalf("the own vote goes out as %d bytes, want a reference", len(out))
	}
	if r := ft.vals[p2p.KindRecords](context.Background(), self, out); r != p2p.Accept {
		t.Fatalf("own reference: %v", r)
	}
	ft.inboxEmpty("own reference")
	ft.expect("bob's reference", p2p.KindRecords, v[1].Ref().Marshal(), p2p.Accept, reasonOK)
	got := takeRecords(t, ft)
	in, ok := got[incentivestest.PeerID("bob")]
	if len(got) != 1 || !ok || !bytes.Equal(in.sr.Marshal(), v[1].Marshal()) || !bytes.Equal(in.rec.Marshal(), v[1].Record) {
		t.Fatalf("the loop got %d votes; bob's is not his signed record", len(got))
	}
	ft.expect("bob's vote whole", p2p.KindRecords, v[1].Marshal(), p2p.Accept, reasonOK)
	ft.inboxEmpty("bob's vote whole")
	srv := newFetchServer(ft.f.reg, ft.f.content, ft.f.records)
	digest := incentives.RecordDigest(v[0].Record)
	if body, err := srv.handle(context.Background(), neighbor, bodyRequest(9, digest).marshal()); err != nil || !bytes.Equal(body, v[0].Record) {
		t.Fatalf("serving the record by digest: %d bytes, %v", len(body), err)
	}
	if body, _ := srv.handle(context.Background(), neighbor, bodyRequest(8, digest).marshal()); !bytes.Equal(body, v[0].Record) {
		t.Fatal("the record is not served by digest whatever the round asked with")
	}
	if body, _ := srv.handle(context.Background(), neighbor, bodyRequest(9, [32]byte{1}).marshal()); len(body) != 0 {
		t.Fatal("served a record for a digest it does not hold")
	}
	if got, _ := srv.handle(context.Background(), neighbor, recordRequest(9, incentivestest.PeerID("bob")).marshal()); !bytes.Equal(got, v[1].Marshal()) {
		t.Fatal("bob's vote, which came as a reference, is not served whole")
	}
}

// TestVoteRefFetchesItsRecordOnce: references of three signers naming one record the node
// does not hold pass at once (gossip carries them on) and make it ask for the record
// once, from the forwarder; every vote then reaches the loop whole.
func TestVoteRefFetchesItsRecordOnce(t *testing.T) {
	fx := incentivestest.New("net-a", "run-a")
	v := votesFor(t, fx.Network, fx.Run, 9, 0, "alice", "bob", "carol")
	peers := &bodyPeers{holds: map[peer.ID][]byte{neighbor: v[0].Record}, gate: make(chan struct{})}
	ft := newRecordTest(t, 16, func(c *fullConfig) {
		c.Fetch = &fetchClient{host: peers, maxShard: c.Wire.shardCap(), timeout: time.Second}
	})
	ft.f.setView(core.View{NextClose: 10, NextLocal: 11, Window: 2, RepairFrom: 7, RecordsUpTo: 11,
		Voters: map[string]bool{v[0].Signer: true, v[1].Signer: true, v[2].Signer: true}})
	for _, sr := range v { // all three come while the record is on its way
		ft.expect("a reference", p2p.KindRecords, sr.Ref().Marshal(), p2p.Accept, reasonOK)
	}
	close(peers.gate)
	got := takeRecords(t, ft)
	for _, sr := range v {
		if in, ok := got[sr.Signer]; !ok || !bytes.Equal(in.sr.Marshal(), sr.Marshal()) {
			t.Fatalf("%s's vote did not reach the loop whole", sr.Signer)
		}
	}
	if a := peers.asks(); len(a) != 1 || a[0] != neighbor {
		t.Fatalf("asked %v for the record, want the forwarder once", a)
	}
}

// TestVoteRefRecordFromAnotherPeerWhenTheForwarderLies: a forwarder that sends another
// record than the digest names, or none, is passed over: the record is taken from the
// next peer that sends the right one. When no peer has it, the vote stays out of the
// loop (counted record_unknown) until it comes whole.
func TestVoteRefRecordFromAnotherPeerWhenTheForwarderLies(t *testing.T) {
	fx := incentivestest.New("net-a", "run-a")
	v := votesFor(t, fx.Network, fx.Run, 9, 0, "alice")
	other := votesFor(t, fx.Network, fx.Run, 9, 1, "alice")
	honest, silent := peer.ID("honest"), peer.ID("silent")
	peers := &bodyPeers{holds: map[peer.ID][]byte{neighbor: other[0].Record, honest: v[0].Record}}
	var topic []peer.ID
	ft := newRecordTest(t, 16, func(c *fullConfig) {
		c.Fetch = &fetchClient{host: peers, maxShard: c.Wire.shardCap(), timeout: time.Second}
		c.Peers = func() []peer.ID { return topic }
	})
	topic = []peer.ID{silent, neighbor, honest}
	ft.expect("a reference", p2p.KindRecords, v[0].Ref().Marshal(), p2p.Accept, reasonOK)
	got := takeRecords(t, ft)
	if in, ok := got[v[0].Signer]; !ok || !bytes.Equal(in.sr.Marshal(), v[0].Marshal()) {
		t.Fatal("the vote did not reach the loop with its own record")
	}
	if a := peers.asks(); len(a) != 3 || a[0] != neighbor || a[1] != silent || a[2] != honest {
		t.Fatalf("asked %v, want the forwarder, then the topic's peers in turn until one sent it", a)
	}

	bob := votesFor(t, fx.Network, fx.Run, 10, 0, "bob")
	topic = []peer.ID{silent}
	ft.expect("a reference nobody serves", p2p.KindRecords, bob[0].Ref().Marshal(), p2p.Accept, reasonOK)
	ft.inboxEmpty("a reference nobody serves")
	if n := ft.count(p2p.KindRecords, p2p.Ignore, reasonBodyUnknown); n != 1 {
		t.Fatalf("%v references counted record_unknown, want 1", n)
	}
	ft.expect("the same vote whole", p2p.KindRecords, bob[0].Marshal(), p2p.Accept, reasonOK)
	if got := takeRecords(t, ft); len(got) != 1 || !bytes.Equal(got[bob[0].Signer].sr.Marshal(), bob[0].Marshal()) {
		t.Fatal("the vote whole did not reach the loop")
	}
}

// TestVoteRefSignedTwiceIsADoubleVote: a second reference of a signer for a round, naming
// another record, passes once and reaches the loop with its record, so that the core
// holds both and drops the vote; a third is ignored, and a reference whose signature is
// not the signer's is rejected before anything is fetched.
func TestVoteRefSignedTwiceIsADoubleVote(t *testing.T) {
	fx := incentivestest.New("net-a", "run-a")
	first := votesFor(t, fx.Network, fx.Run, 9, 0, "alice")[0]
	second := votesFor(t, fx.Network, fx.Run, 9, 1, "alice")[0]
	peers := &bodyPeers{holds: map[peer.ID][]byte{neighbor: second.Record}}
	ft := newRecordTest(t, 16, func(c *fullConfig) {
		c.Fetch = &fetchClient{host: peers, maxShard: c.Wire.shardCap(), timeout: time.Second}
	})
	ft.expect("the first vote whole", p2p.KindRecords, first.Marshal(), p2p.Accept, reasonOK)
	ft.expect("a second vote as a reference", p2p.KindRecords, second.Ref().Marshal(), p2p.Accept, reasonOK)
	ft.f.wg.Wait()
	var got [][]byte
	var proof *incentives.Evidence
	for len(ft.inbox) > 0 {
		switch in := (<-ft.inbox).(type) {
		case recordIn:
			got = append(got, in.sr.Marshal())
		case evidenceIn:
			proof = in.ev
		}
	}
	if len(got) != 2 || !bytes.Equal(got[0], first.Marshal()) || !bytes.Equal(got[1], second.Marshal()) {
		t.Fatalf("%d votes reached the loop, want both of alice's, whole, in turn", len(got))
	}
	want, err := incentives.NewRecordEquivocation(first, second)
	if err != nil {
		t.Fatal(err)
	}
	if proof == nil || proof.ID() != want.ID() {
		t.Fatal("the double vote made of the two references did not reach the loop as evidence")
	}
	ft.mu.Lock()
	published := len(ft.published)
	ft.mu.Unlock()
	if published != 1 {
		t.Fatalf("%d evidence published, want the double vote", published)
	}
	third := votesFor(t, fx.Network, fx.Run, 9, 2, "alice")[0]
	ft.expect("a third", p2p.KindRecords, third.Ref().Marshal(), p2p.Ignore, reasonSecondRecord)
	forged := votesFor(t, fx.Network, fx.Run, 10, 0, "alice")[0].Ref()
	forged.Sig[0] ^= 1
	ft.expect("a forged reference", p2p.KindRecords, forged.Marshal(), p2p.Reject, reasonSignature)
	if a := peers.asks(); len(a) != 1 {
		t.Fatalf("asked %d times, want once (the second record)", len(a))
	}
}

// TestVoteRefForgedSignatureOnAHeldVoteRejected: votes are told apart by record digest,
// so a copy of a vote the node holds under a signature that is not the signer's (whole or
// as a reference) is checked and rejected, not taken for the vote held.
func TestVoteRefForgedSignatureOnAHeldVoteRejected(t *testing.T) {
	ft := newRecordTest(t, 16, nil)
	v := votesFor(t, ft.fx.Network, ft.fx.Run, 9, 0, "alice")[0]
	ft.expect("the vote", p2p.KindRecords, v.Marshal(), p2p.Accept, reasonOK)
	ft.expect("the vote as a reference", p2p.KindRecords, v.Ref().Marshal(), p2p.Accept, reasonOK)
	forged := *v
	forged.Sig = bytes.Clone(v.Sig)
	forged.Sig[5] ^= 1
	ft.expect("the vote whole, forged", p2p.KindRecords, forged.Marshal(), p2p.Reject, reasonSignature)
	ft.expect("the vote as a reference, forged", p2p.KindRecords, forged.Ref().Marshal(), p2p.Reject, reasonSignature)
	if got := takeRecords(t, ft); len(got) != 1 {
		t.Fatalf("%d votes reached the loop, want alice's once", len(got))
	}
}

// TestVoteRefOfAnotherRoundPoisonsNoFetch: a voter's reference for round 10 naming the
// record of round 9 (so that the fetch would ask for the wrong round) keeps no honest
// vote naming that record from the loop: the record is served by digest, the honest
// votes reach the loop, and the odd reference is held but never delivered.
func TestVoteRefOfAnotherRoundPoisonsNoFetch(t *testing.T) {
	fx := incentivestest.New("net-a", "run-a")
	honest := votesFor(t, fx.Network, fx.Run, 9, 0, "alice")[0]
	rec, err := incentives.DecodeRecord(honest.Record)
	if err != nil {
		t.Fatal(err)
	}
	poison, err := incentives.SignRecord(incentivestest.Identity("bob"), fx.Network, fx.Run, rec)
	if err != nil {
		t.Fatal(err)
	}
	pref := poison.Ref()
	pref.Round = 10 // the signature must cover round 10: sign the vote message itself
	sig, err := incentivestest.Identity("bob").Sign(incentives.VoteMessage(fx.Network, fx.Run, pref.Signer, 10, pref.Key()))
	if err != nil {
		t.Fatal(err)
	}
	pref.Sig = sig
	srv := newFetchServer(nil, newContentStore(0), newRecordBook(0))
	srv.records.addBody(9, incentives.RecordDigest(honest.Record), honest.Record)
	peers := &servingPeer{srv: srv, gate: make(chan struct{})}
	ft := newRecordTest(t, 16, func(c *fullConfig) {
		c.Fetch = &fetchClient{host: peers, maxShard: c.Wire.shardCap(), timeout: time.Second}
	})
	ft.expect("bob's reference of round 10 naming round 9's record", p2p.KindRecords, pref.Marshal(), p2p.Accept, reasonOK)
	ft.expect("alice's reference", p2p.KindRecords, honest.Ref().Marshal(), p2p.Accept, reasonOK)
	close(peers.gate)
	got := takeRecords(t, ft)
	if in, ok := got[honest.Signer]; len(got) != 1 || !ok || !bytes.Equal(in.sr.Marshal(), honest.Marshal()) {
		t.Fatalf("%d votes reached the loop, want alice's alone, whole", len(got))
	}
	if ft.f.records.waiting(recordKey{round: 10, signer: pref.Signer}, pref.Key()) {
		t.Fatal("bob's reference still waits for a record it can never have")
	}
}

// servingPeer answers fetch requests from a fetch server, after gate closes.
type servingPeer struct {
	srv  *fetchServer
	gate chan struct{}
}

func (p *servingPeer) Request(ctx context.Context, _ peer.ID, _ string, req []byte, _ int) ([]byte, error) {
	<-p.gate
	return p.srv.handle(ctx, neighbor, req)
}

// TestVoteRefWaitingReachesTheLoopWhenTheRecordComes: a reference whose record no peer
// held when asked waits; when the node's own vote for that record goes out (its close),
// the waiting vote reaches the loop. A gap fetch answered with the bare reference instead
// of the signed record is not what was asked for.
func TestVoteRefWaitingReachesTheLoopWhenTheRecordComes(t *testing.T) {
	fx := incentivestest.New("net-a", "run-a")
	v := votesFor(t, fx.Network, fx.Run, 9, 0, "alice", "bob")
	ft := newRecordTest(t, 16, func(c *fullConfig) {
		c.Fetch = &fetchClient{host: &bodyPeers{}, maxShard: c.Wire.shardCap(), timeout: time.Second}
	})
	ft.expect("bob's reference", p2p.KindRecords, v[1].Ref().Marshal(), p2p.Accept, reasonOK)
	ft.inboxEmpty("no peer holds the record")
	if n := ft.count(p2p.KindRecords, p2p.Ignore, reasonBodyUnknown); n != 1 {
		t.Fatalf("%v counted record_unknown, want 1", n)
	}
	key := recordKey{round: 9, signer: v[1].Signer}
	if ft.f.checkRecordAgain(context.Background(), neighbor, v[1].Ref().Marshal(), key, true) {
		t.Fatal("a reference answering a request for the signed record ended the asking")
	}
	ft.f.outgoing(p2p.KindRecords, v[0].Marshal()) // the node closes round 9 alike and votes
	got := takeRecords(t, ft)
	if in, ok := got[v[1].Signer]; len(got) != 1 || !ok || !bytes.Equal(in.sr.Marshal(), v[1].Marshal()) {
		t.Fatalf("%d votes reached the loop, want bob's, whole", len(got))
	}
}

// TestRecordBookRemoveKeepsTheSecondVote: removing a signer's first vote for a round (the
// loop never took it) keeps the second as its vote: the book still holds one, and a third
// record is a conflict, not a first.
func TestRecordBookRemoveKeepsTheSecondVote(t *testing.T) {
	b := newRecordBook(0)
	k := recordKey{round: 3, signer: "s"}
	if b.put(k, [32]byte{1}, []byte("sig1"), []byte("one")) != putNew || b.putRef(k, [32]byte{2}, []byte("sig2")) != putConflict {
		t.Fatal("first and second not taken")
	}
	b.remove(k, [32]byte{1})
	if b.find(k, [32]byte{2}, []byte("sig2")) != putSame || !b.waiting(k, [32]byte{2}) {
		t.Fatal("the second vote was lost with the first")
	}
	if b.find(k, [32]byte{3}, []byte("sig3")) != putConflict || b.bytes != 0 {
		t.Fatalf("after the remove: a third is %v, %d bytes held", b.find(k, [32]byte{3}, []byte("sig3")), b.bytes)
	}
	if b.find(k, [32]byte{2}, []byte("other sig")) != putResigned {
		t.Fatal("the held vote under another signature is not told apart")
	}
}
