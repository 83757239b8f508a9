package node

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
	"github.com/lowband/lowband/node/core"
	"github.com/lowband/lowband/node/store"
	"github.com/lowband/lowband/p2p"
)

// recordLedger is a ledger in which alice and bob hold stake and mallory none.
func recordLedger(t testing.TB) *incentives.State {
	t.Helper()
	st, err := store.GenesisFromSpec(configs.IncentivesSpec{
		Stakes:   map[string]uint64{incentivestest.PeerID("alice"): 100, incentivestest.PeerID("bob"): 100},
		MinStake: 10, Reward: 1, EvidenceWindow: 4,
	})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// newRecordTest is a fullTest whose ledger is recordLedger and whose view is NextClose
// 10, NextLocal 11, Window 2, RepairFrom 7: records of rounds 7 to 11 are in the window.
func newRecordTest(t testing.TB, inbox int, edit func(*fullConfig)) *fullTest {
	led := recordLedger(t)
	ft := newFullTest(t, inbox, func(c *fullConfig) {
		c.Ledger = func() *incentives.State { return led }
		if edit != nil {
			edit(c)
		}
	})
	ft.f.setView(core.View{NextClose: 10, NextLocal: 11, Window: 2, RepairFrom: 7, RecordsUpTo: 11})
	return ft
}

// signedRecordBytes is signer's signed record of round r for the fixture's network and
// run; variant makes records of one round differ.
func signedRecordBytes(t testing.TB, fx *incentivestest.Fixture, signer string, r uint64, variant byte) []byte {
	t.Helper()
	return signRecordAs(t, signer, fx.Network, fx.Run, r, variant).Marshal()
}

func signRecordAs(t testing.TB, signer, network, run string, r uint64, variant byte) *incentives.SignedRecord {
	t.Helper()
	root := make([]byte, 32)
	root[0] = variant
	rec := &incentives.Record{Version: incentives.RecordVersion, Round: r, PrevRoot: make([]byte, 32), NewRoot: root}
	sr, err := incentives.SignRecord(incentivestest.Identity(signer), network, run, rec)
	if err != nil {
		t.Fatal(err)
	}
	return sr
}

// TestRecordsCheckedAndCounted: each record gets its verdict and counter; only the
// first valid record of a staked signer for a round of the window reaches the loop, once,
// rounds not closed yet included.
func TestRecordsCheckedAndCounted(t *testing.T) {
	ft := newRecordTest(t, 16, nil)
	fx := ft.fx
	good := signedRecordBytes(t, fx, "alice", 9, 0)
	forged := signRecordAs(t, "alice", fx.Network, fx.Run, 9, 1)
	forged.Sig[0] ^= 1
	committed, err := incentives.SignCommitted(incentivestest.Identity("alice"), fx.Network, fx.Run,
		&incentives.Record{Version: incentives.RecordVersion, Round: 9, PrevRoot: make([]byte, 32), NewRoot: make([]byte, 32)})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what   string
		data   []byte
		want   p2p.Result
		reason string
	}{
		{"too large", make([]byte, p2p.MaxMessageSize+1), p2p.Reject, reasonSize},
		{"junk", []byte{0xa0}, p2p.Reject, reasonDecode},
		{"an unsigned record", (&incentives.Record{Version: incentives.RecordVersion, Round: 9, PrevRoot: make([]byte, 32), NewRoot: make([]byte, 32)}).Marshal(), p2p.Reject, reasonDecode},
		{"another network", signRecordAs(t, "alice", "net-b", fx.Run, 9, 0).Marshal(), p2p.Reject, reasonNetwork},
		{"another run", signRecordAs(t, "alice", fx.Network, "run-b", 9, 0).Marshal(), p2p.Reject, reasonRun},
		{"a bad signature", forged.Marshal(), p2p.Reject, reasonSignature},
		{"a committed record, not a vote", committed.Marshal(), p2p.Reject, reasonDecode},
		{"older than the repair window", signedRecordBytes(t, fx, "alice", 6, 0), p2p.Ignore, reasonLate},
		{"far in the future", signedRecordBytes(t, fx, "alice", 12, 0), p2p.Ignore, reasonFuture},
		{"a signer without stake", signedRecordBytes(t, fx, "mallory", 9, 0), p2p.Ignore, reasonUnstaked},
	} {
		ft.expect(c.what, p2p.KindRecords, c.data, c.want, c.reason)
		ft.inboxEmpty(c.what)
	}
	ft.expect("a good record", p2p.KindRecords, good, p2p.Accept, reasonOK)
	in := (<-ft.inbox).(recordIn)
	if in.sr.Signer != incentivestest.PeerID("alice") || in.rec.Round != 9 {
		t.Fatalf("inbox got the record of %s for round %d", in.sr.Signer, in.rec.Round)
	}
	ft.expect("the same record again", p2p.KindRecords, good, p2p.Accept, reasonOK)
	ft.inboxEmpty("the same record again")
	ft.expect("a record of a round not closed yet", p2p.KindRecords, signedRecordBytes(t, fx, "bob", 11, 0), p2p.Accept, reasonOK)
	if in := (<-ft.inbox).(recordIn); in.rec.Round != 11 {
		t.Fatalf("inbox got round %d", in.rec.Round)
	}
}

// TestRecordSignedTwiceForwardedOnceThenIgnored: a second, different record of a signer
// for a round passes (Accept: gossip carries it to every node, so all hold both and drop
// the vote alike) and reaches the loop once; a third and later are ignored.
func TestRecordSignedTwiceForwardedOnceThenIgnored(t *testing.T) {
	ft := newRecordTest(t, 16, nil)
	fx := ft.fx
	ft.expect("a first record", p2p.KindRecords, signedRecordBytes(t, fx, "alice", 9, 0), p2p.Accept, reasonOK)
	<-ft.inbox
	second := signedRecordBytes(t, fx, "alice", 9, 1)
	ft.expect("a second record of the signer for the round", p2p.KindRecords, second, p2p.Accept, reasonOK)
	if in := (<-ft.inbox).(recordIn); in.rec.Round != 9 || in.rec.NewRoot[0] != 1 {
		t.Fatalf("inbox got round %d, variant %d", in.rec.Round, in.rec.NewRoot[0])
	}
	ft.expect("the second record again", p2p.KindRecords, second, p2p.Accept, reasonOK)
	ft.inboxEmpty("the second record again")
	ft.expect("a third record", p2p.KindRecords, signedRecordBytes(t, fx, "alice", 9, 2), p2p.Ignore, reasonSecondRecord)
	ft.inboxEmpty("a third record")
	forged := signRecordAs(t, "alice", fx.Network, fx.Run, 10, 1)
	ft.expect("a first record of round 10", p2p.KindRecords, signedRecordBytes(t, fx, "alice", 10, 0), p2p.Accept, reasonOK)
	<-ft.inbox
	forged.Sig[0] ^= 1
	ft.expect("a forged second record", p2p.KindRecords, forged.Marshal(), p2p.Reject, reasonSignature)
	ft.inboxEmpty("a forged second record")
}

// TestRecordWithAFullInboxIgnoredBusyThenTaken: a record that finds the loop's inbox full
// is Ignore busy and not remembered: the same record later reaches the loop.
func TestRecordWithAFullInboxIgnoredBusyThenTaken(t *testing.T) {
	ft := newRecordTest(t, 1, nil)
	ft.inbox <- evidenceIn{}
	rec := signedRecordBytes(t, ft.fx, "alice", 9, 0)
	ft.expect("inbox full", p2p.KindRecords, rec, p2p.Ignore, reasonBusy)
	<-ft.inbox
	ft.expect("inbox free", p2p.KindRecords, rec, p2p.Accept, reasonOK)
	if _, ok := (<-ft.inbox).(recordIn); !ok {
		t.Fatal("the record did not reach the loop")
	}
}

// TestRecordWithoutAFreeVerificationSlotIgnoredBusy: signatures are checked on the
// verification slots; with none free a record is Ignore busy.
func TestRecordWithoutAFreeVerificationSlotIgnoredBusy(t *testing.T) {
	ft := newRecordTest(t, 16, func(c *fullConfig) { c.MaxHeavy = 1 })
	if !ft.f.tryHeavy() {
		t.Fatal("no slot")
	}
	ft.expect("no slot", p2p.KindRecords, signedRecordBytes(t, ft.fx, "alice", 9, 0), p2p.Ignore, reasonBusy)
	ft.inboxEmpty("no slot")
}

// TestOwnRecordHeldAndServedNotDelivered: the node's own record, checked as it publishes
// it, is not handed to the loop (the core has it) but is served by round and signer.
func TestOwnRecordHeldAndServedNotDelivered(t *testing.T) {
	ft := newRecordTest(t, 16, nil)
	own := signedRecordBytes(t, ft.fx, "alice", 9, 0)
	if r := ft.vals[p2p.KindRecords](context.Background(), self, own); r != p2p.Accept {
		t.Fatalf("own record: %v", r)
	}
	ft.inboxEmpty("own record")
	srv := newFetchServer(ft.f.reg, ft.f.content, ft.f.records)
	got, err := srv.handle(context.Background(), neighbor, recordRequest(9, incentivestest.PeerID("alice")).marshal())
	if err != nil || string(got) != string(own) {
		t.Fatalf("serving the own record: %d bytes, %v", len(got), err)
	}
	if got, _ := srv.handle(context.Background(), neighbor, recordRequest(8, incentivestest.PeerID("alice")).marshal()); len(got) != 0 {
		t.Fatal("served a record it does not hold")
	}
}

// recordPeer serves signed records by round and signer to fetch requests, counting them.
type recordPeer struct {
	mu      sync.Mutex
	records map[uint64][]byte // alice's, by round
	asked   []uint64
}

func (p *recordPeer) Request(_ context.Context, _ peer.ID, _ string, req []byte, _ int) ([]byte, error) {
	r, err := parseFetchRequest(req)
	if err != nil || r.kind != fetchSignedRecord {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asked = append(p.asked, r.slot.round)
	return p.records[r.slot.round], nil
}

// TestRecordGapsFetchedFromTheForwarder: a record of round 10 from a signer whose records
// of rounds 7 to 9 the node never got (it was cut off) makes it ask the neighbour that
// forwarded it for them, once each; those it gets pass the same checks and reach the loop.
func TestRecordGapsFetchedFromTheForwarder(t *testing.T) {
	fx := incentivestest.New("net-a", "run-a")
	served := &recordPeer{records: map[uint64][]byte{
		8: signedRecordBytes(t, fx, "alice", 8, 0),
		9: signedRecordBytes(t, fx, "alice", 9, 0),
	}}
	ft := newRecordTest(t, 16, func(c *fullConfig) {
		c.Fetch = &fetchClient{host: served, maxShard: c.Wire.shardCap(), timeout: time.Second}
	})
	if r := ft.validate(p2p.KindRecords, signedRecordBytes(t, fx, "alice", 10, 0)); r != p2p.Accept {
		t.Fatalf("round 10: %v", r)
	}
	ft.f.wg.Wait()
	if n := ft.count(p2p.KindRecords, p2p.Accept, reasonOK); n != 3 {
		t.Fatalf("%v records accepted, want round 10 and the two fetched", n)
	}
	got := map[uint64]bool{}
	for len(ft.inbox) > 0 {
		got[(<-ft.inbox).(recordIn).rec.Round] = true
	}
	if len(got) != 3 || !got[8] || !got[9] || !got[10] {
		t.Fatalf("rounds that reached the loop: %v, want 8, 9 and 10", got)
	}
	if r := ft.validate(p2p.KindRecords, signedRecordBytes(t, fx, "alice", 11, 0)); r != p2p.Accept {
		t.Fatalf("round 11: %v", r)
	}
	ft.f.wg.Wait()
	served.mu.Lock()
	defer served.mu.Unlock()
	if len(served.asked) != 3 {
		t.Fatalf("asked for rounds %v, want 7, 8 and 9 once each", served.asked)
	}
}

// TestRecordEquivocationEvidenceCheckedAndDelivered: two records of one signer for one
// round, as evidence on the evidence topic, are checked and reach the loop (the evidence
// has no shard header to read the round from: the double vote's round is read instead).
func TestRecordEquivocationEvidenceCheckedAndDelivered(t *testing.T) {
	ft := newRecordTest(t, 16, nil)
	ev, err := incentives.NewRecordEquivocation(signRecordAs(t, "alice", ft.fx.Network, ft.fx.Run, 9, 0), signRecordAs(t, "alice", ft.fx.Network, ft.fx.Run, 9, 1))
	if err != nil {
		t.Fatal(err)
	}
	ft.expect("record equivocation", p2p.KindEvidence, ev.Marshal(), p2p.Accept, reasonOK)
	if in, ok := (<-ft.inbox).(evidenceIn); !ok || in.ev.ID() != ev.ID() {
		t.Fatal("the evidence did not reach the loop")
	}
	old, err := incentives.NewRecordEquivocation(signRecordAs(t, "alice", ft.fx.Network, ft.fx.Run, 1, 0), signRecordAs(t, "alice", ft.fx.Network, ft.fx.Run, 1, 1))
	if err != nil {
		t.Fatal(err)
	}
	ft.expect("record equivocation out of the evidence window", p2p.KindEvidence, old.Marshal(), p2p.Ignore, reasonLate)
}

// TestRecordOfASignerWithPowerOnlyInItsRoundsLedgerAccepted: the cheap stake check reads
// the core's voters (power in a ledger of the window), not only the ledger in force: a
// signer slashed to nothing since still weighs in the rounds before, and its record
// passes; a signer in neither is ignored before its signature is checked.
func TestRecordOfASignerWithPowerOnlyInItsRoundsLedgerAccepted(t *testing.T) {
	ft := newRecordTest(t, 16, nil)
	carol := incentivestest.PeerID("carol") // no stake in the ledger in force
	ft.f.setView(core.View{NextClose: 10, NextLocal: 11, Window: 2, RepairFrom: 7, RecordsUpTo: 11, Voters: map[string]bool{carol: true}})
	ft.expect("a voter of the window", p2p.KindRecords, signedRecordBytes(t, ft.fx, "carol", 8, 0), p2p.Accept, reasonOK)
	if in := (<-ft.inbox).(recordIn); in.sr.Signer != carol {
		t.Fatalf("inbox got %s's record", in.sr.Signer)
	}
}

// TestRecordOfAStakedSignerWithoutPowerIgnoredUnchecked: a signer with stake but no voting
// power (below the minimum stake, or not among the core's voters) weighs nothing: its
// record is ignored before its signature is checked, and never stored.
func TestRecordOfAStakedSignerWithoutPowerIgnoredUnchecked(t *testing.T) {
	led, err := store.GenesisFromSpec(configs.IncentivesSpec{
		Stakes:   map[string]uint64{incentivestest.PeerID("alice"): 100, incentivestest.PeerID("dave"): 5},
		MinStake: 10, Reward: 1, EvidenceWindow: 4,
	})
	if err != nil {
		t.Fatal(err)
	}
	ft := newRecordTest(t, 16, func(c *fullConfig) { c.Ledger = func() *incentives.State { return led } })
	ft.expect("below the minimum stake", p2p.KindRecords, signedRecordBytes(t, ft.fx, "dave", 8, 0), p2p.Ignore, reasonUnstaked)
	ft.f.setView(core.View{NextClose: 10, NextLocal: 11, Window: 2, RepairFrom: 7, RecordsUpTo: 11, Voters: map[string]bool{}})
	ft.expect("staked, no voter of the window", p2p.KindRecords, signedRecordBytes(t, ft.fx, "alice", 8, 0), p2p.Ignore, reasonUnstaked)
	ft.inboxEmpty("records without power")
	if ft.f.records.get(recordKey{round: 8, signer: incentivestest.PeerID("dave")}) != nil || ft.f.records.get(recordKey{round: 8, signer: incentivestest.PeerID("alice")}) != nil {
		t.Fatal("a record without power was stored")
	}
}

// TestRecordOfANoVoterOfTheViewOfferedAgainWhenItVotes: a record of the round after the
// next to close, whose signer is no voter of the view when it comes (Ignore unstaked), is
// set aside and reaches the loop once a later view counts the signer among its voters
// (its round's ledger gave it power), without being sent again.
func TestRecordOfANoVoterOfTheViewOfferedAgainWhenItVotes(t *testing.T) {
	ft := newRecordTest(t, 16, nil)
	carol := incentivestest.PeerID("carol")
	ft.f.setView(core.View{NextClose: 10, NextLocal: 11, Window: 2, RepairFrom: 7, RecordsUpTo: 11, Voters: map[string]bool{}})
	ft.expect("no voter yet", p2p.KindRecords, signedRecordBytes(t, ft.fx, "carol", 11, 0), p2p.Ignore, reasonUnstaked)
	ft.inboxEmpty("no voter yet")
	ft.f.setView(core.View{NextClose: 10, NextLocal: 11, Window: 2, RepairFrom: 7, RecordsUpTo: 11, Voters: map[string]bool{carol: true}})
	select {
	case in := <-ft.inbox:
		if in, ok := in.(recordIn); !ok || in.sr.Signer != carol || in.rec.Round != 11 {
			t.Fatalf("inbox got %#v, want carol's record of round 11", in)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("carol's record did not reach the loop once carol votes")
	}
}

// TestRecordsSetAsideBounded: one record per round and signer is set aside, at most
// maxAside in all; those of rounds before the view's are forgotten, and only those of
// voters are taken.
func TestRecordsSetAsideBounded(t *testing.T) {
	b := newRecordBook(0)
	for i := range maxAside + 10 {
		k := recordKey{round: uint64(i % 2), signer: fmt.Sprint("signer", i)}
		b.setAside(k, "fwd", []byte{byte(i)})
		b.setAside(k, "fwd", []byte("a second record of the key"))
	}
	if len(b.aside) != maxAside || b.asideBytes != maxAside {
		t.Fatalf("%d records, %d bytes set aside; want %d of one byte each", len(b.aside), b.asideBytes, maxAside)
	}
	got := b.takeAside(1, func(s string) bool { return s == "signer1" || s == "signer2" })
	if len(got) != 1 || got[0].key.signer != "signer1" || len(b.aside) != maxAside/2-1 {
		t.Fatalf("took %v, %d left; want signer1's, the round-1 others left", got, len(b.aside))
	}
}
