package node

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
	"github.com/lowband/lowband/node/core"
	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/verify"
)

// fullTest is a node's gossip validators with full checks over the fixture's network,
// an inbox of inboxSize events, and the evidence it publishes.
type fullTest struct {
	t     testing.TB
	fx    *incentivestest.Fixture
	f     *fullChecks
	met   *gossipMetrics
	reg   *prometheus.Registry
	vals  map[string]p2p.Validator
	inbox chan any

	mu        sync.Mutex
	published [][]byte
}

var (
	self     = peer.ID("self")
	neighbor = peer.ID("neighbour")
)

func newFullTest(t testing.TB, inboxSize int, edit func(*fullConfig)) *fullTest {
	ft := &fullTest{t: t, fx: incentivestest.New("net-a", "run-a"), inbox: make(chan any, inboxSize)}
	var err error
	ft.reg = prometheus.NewRegistry()
	if ft.met, err = newGossipMetrics(ft.reg); err != nil {
		t.Fatal(err)
	}
	cfg := fullConfig{
		Self: self, Wire: wire{network: ft.fx.Network, run: ft.fx.Run, maxPayload: 4 << 10},
		Checker: ft.fx.Checker(), EvidenceWindow: 4, Metrics: ft.met,
		Deliver: func(ev any) bool {
			select {
			case ft.inbox <- ev:
				return true
			default:
				return false
			}
		},
		Publish: func(_ context.Context, kind string, data []byte) error {
			ft.mu.Lock()
			defer ft.mu.Unlock()
			if kind == p2p.KindEvidence {
				ft.published = append(ft.published, data)
			}
			return nil
		},
	}
	if edit != nil {
		edit(&cfg)
	}
	ft.f = newFullChecks(cfg)
	t.Cleanup(ft.f.close)
	ft.vals = validators(cfg.Wire, ft.f.checks(), ft.met)
	ft.f.setView(core.View{NextClose: 10, NextLocal: 11, Window: 2})
	return ft
}

// validate runs the validator of kind on data from the neighbour.
func (ft *fullTest) validate(kind string, data []byte) p2p.Result {
	return ft.vals[kind](context.Background(), neighbor, data)
}

// count is the verdicts counter of kind, result and reason.
func (ft *fullTest) count(kind string, r p2p.Result, reason string) float64 {
	mfs, err := ft.reg.Gather()
	if err != nil {
		ft.t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			labels := make(map[string]string)
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["kind"] == kind && labels["result"] == r.String() && labels["reason"] == reason {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// expect asserts a verdict and its counter.
func (ft *fullTest) expect(what, kind string, data []byte, want p2p.Result, reason string) {
	ft.t.Helper()
	if !slices.Contains(reasons, reason) {
		ft.t.Fatalf("%s: reason %q is not in the fixed set", what, reason)
	}
	before := ft.count(kind, want, reason)
	if got := ft.validate(kind, data); got != want {
		ft.t.Fatalf("%s: got %v, want %v (%s)", what, got, want, reason)
	}
	if n := ft.count(kind, want, reason); n != before+1 {
		ft.t.Fatalf("%s: counter %s/%s/%s went from %v to %v", what, kind, want, reason, before, n)
	}
}

// inboxEmpty asserts that nothing reached the loop.
func (ft *fullTest) inboxEmpty(what string) {
	ft.t.Helper()
	ft.f.wg.Wait()
	if n := len(ft.inbox); n != 0 {
		ft.t.Fatalf("%s: %d events reached the inbox, e.g. %T", what, n, <-ft.inbox)
	}
}

// holdBundle verifies and holds a bundle as the attest topic would.
func (ft *fullTest) holdBundle(b []byte) {
	ft.t.Helper()
	if r, reason := ft.f.addBundle(b); r != p2p.Accept {
		ft.t.Fatalf("holding bundle: %v %s", r, reason)
	}
}

// signedAs signs a shard header naming peer under bundle with key.
func signedAs(t testing.TB, fx *incentivestest.Fixture, key ed25519.PrivateKey, bundle []byte, peerName string, round uint64, payload string) []byte {
	t.Helper()
	b, err := verify.UnmarshalBundle(bundle)
	if err != nil {
		t.Fatal(err)
	}
	bh := b.Hash()
	h := verify.ShardHeader{Network: fx.Network, Run: fx.Run, Round: round, Peer: incentivestest.PeerID(peerName), Count: 1, BundleHash: bh[:]}
	s, err := verify.SignShard(key, h, []byte(payload))
	if err != nil {
		t.Fatal(err)
	}
	return marshalShard(t, s)
}

// TestBadShardsRefusedAndCounted: every bad shard the issue lists gets its verdict and
// its counter, and none reaches the loop.
func TestBadShardsRefusedAndCounted(t *testing.T) {
	ft := newFullTest(t, 16, nil)
	fx := ft.fx
	alice := fx.Bundle("alice", "")
	ft.holdBundle(alice)
	good := marshalShard(t, fx.Shard("alice", alice, 10, 0, []byte("payload")))
	other := incentivestest.New("net-b", fx.Run)
	otherRun := incentivestest.New(fx.Network, "run-b")
	for _, c := range []struct {
		name   string
		data   []byte
		want   p2p.Result
		reason string
	}{
		{"oversized", make([]byte, ft.f.cfg.Wire.shardCap()+1), p2p.Reject, reasonSize},
		{"truncated", good[:len(good)-3], p2p.Reject, reasonDecode},
		{"other network", marshalShard(t, other.Shard("alice", other.Bundle("alice", ""), 10, 0, []byte("payload"))), p2p.Reject, reasonNetwork},
		{"other run", marshalShard(t, otherRun.Shard("alice", otherRun.Bundle("alice", ""), 10, 0, []byte("payload"))), p2p.Reject, reasonRun},
		{"closed round", marshalShard(t, fx.Shard("alice", alice, 9, 0, []byte("payload"))), p2p.Ignore, reasonLate},
		{"replay from an earlier round", marshalShard(t, fx.Shard("alice", alice, 3, 0, []byte("payload"))), p2p.Ignore, reasonReplay},
		{"too far ahead", marshalShard(t, fx.Shard("alice", alice, 14, 0, []byte("payload"))), p2p.Ignore, reasonFuture},
		{"peer other than the bundle's", signedAs(t, fx, fx.Key("alice"), alice, "bob", 10, "payload"), p2p.Reject, reasonPeerMismatch},
		{"signed by a key the bundle does not attest", signedAs(t, fx, fx.Key("mallory"), alice, "alice", 10, "payload"), p2p.Reject, reasonSignature},
	} {
		ft.expect(c.name, p2p.KindShards, c.data, c.want, c.reason)
		ft.inboxEmpty(c.name)
	}
	if len(ft.published) != 0 {
		t.Fatalf("published %d evidence items for shards that prove nothing", len(ft.published))
	}
	ft.expect("good", p2p.KindShards, good, p2p.Accept, reasonOK)
	if in := (<-ft.inbox).(shardIn); string(marshalShard(t, in.shard)) != string(good) || string(in.bundle) != string(alice) {
		t.Fatal("the good shard reached the inbox changed")
	}
	if ft.f.verifySeconds() <= 0 {
		t.Fatal("no verification time measured")
	}
}

// TestShardWithUnknownBundleStashedThenExpired: a shard whose bundle never arrives is
// ignored, kept in the stash (not delivered) and dropped once its round closes.
func TestShardWithUnknownBundleStashedThenExpired(t *testing.T) {
	ft := newFullTest(t, 16, nil)
	s := marshalShard(t, ft.fx.Shard("alice", ft.fx.Bundle("alice", ""), 10, 0, []byte("payload")))
	ft.expect("unknown bundle", p2p.KindShards, s, p2p.Ignore, reasonBundleUnknown)
	if n, _ := ft.f.stash.Len(); n != 1 {
		t.Fatalf("stash holds %d entries, want 1", n)
	}
	ft.f.setView(core.View{NextClose: 11, NextLocal: 12, Window: 2})
	if n, _ := ft.f.stash.Len(); n != 0 {
		t.Fatalf("stash holds %d entries after the round closed, want 0", n)
	}
	ft.inboxEmpty("unknown bundle")
}

// TestStashedShardDeliveredOnceWhenBundleArrives: the stash is drained when the bundle
// arrives on the attest topic (signatures checked in one batch: a forged one among them
// is refused alone), and the shard reaches the loop exactly once, however often its
// bytes come back.
func TestStashedShardDeliveredOnceWhenBundleArrives(t *testing.T) {
	ft := newFullTest(t, 16, nil)
	alice := ft.fx.Bundle("alice", "")
	s := marshalShard(t, ft.fx.Shard("alice", alice, 10, 0, []byte("payload")))
	forged := signedAs(t, ft.fx, ft.fx.Key("mallory"), alice, "alice", 10, "forged")
	ft.expect("unknown bundle", p2p.KindShards, s, p2p.Ignore, reasonBundleUnknown)
	ft.expect("forged, unknown bundle", p2p.KindShards, forged, p2p.Ignore, reasonBundleUnknown)
	ft.expect("bundle", p2p.KindAttest, alice, p2p.Accept, reasonOK)
	if ft.count(p2p.KindShards, p2p.Accept, reasonOK) != 1 || ft.count(p2p.KindShards, p2p.Reject, reasonSignature) != 1 {
		t.Fatal("the drained shards were not counted: one accepted, one refused (signature)")
	}
	if r, _ := ft.f.recheck(s); r != p2p.Accept {
		t.Fatalf("the same shard again: %v", r)
	}
	ft.f.wg.Wait()
	if n := len(ft.inbox); n != 1 {
		t.Fatalf("%d events in the inbox, want the shard once", n)
	}
	if in, ok := (<-ft.inbox).(shardIn); !ok || in.shard.Header.Round != 10 {
		t.Fatalf("inbox got %+v", in)
	}
}

// TestShardUnderFailingBundleRefused: a bundle that does not verify is refused on the
// attest topic; a shard signed under it is refused, and is evidence only when the
// failure is provable.
func TestShardUnderFailingBundleRefused(t *testing.T) {
	ft := newFullTest(t, 16, nil)
	for _, c := range []struct {
		class    verify.Class
		evidence bool
	}{{verify.ClassMeasurementNotAllowed, true}, {verify.ClassUntrustedRoot, false}} {
		peerName := "peer-" + string(c.class)
		b := ft.fx.Bundle(peerName, c.class)
		ft.expect(string(c.class)+" bundle", p2p.KindAttest, b, p2p.Reject, reasonBundleInvalid)
		s := marshalShard(t, ft.fx.Shard(peerName, b, 10, 0, []byte("payload")))
		ft.expect(string(c.class)+" shard", p2p.KindShards, s, p2p.Reject, reasonBundleInvalid)
		ft.f.wg.Wait()
		ft.wantEvidence(t, string(c.class), c.evidence, incentives.KindInvalidAttestation)
	}
}

// wantEvidence asserts that the node made (delivered and published) one evidence item
// of kind that checks out, or none.
func (ft *fullTest) wantEvidence(t *testing.T, what string, want bool, kind incentives.Kind) {
	t.Helper()
	ft.mu.Lock()
	pub := ft.published
	ft.published = nil
	ft.mu.Unlock()
	if !want {
		if len(pub) != 0 || len(ft.inbox) != 0 {
			t.Fatalf("%s: published %d and delivered %d, want no evidence", what, len(pub), len(ft.inbox))
		}
		return
	}
	if len(pub) != 1 || len(ft.inbox) != 1 {
		t.Fatalf("%s: published %d and delivered %d evidence items, want 1", what, len(pub), len(ft.inbox))
	}
	in, ok := (<-ft.inbox).(evidenceIn)
	if !ok || in.ev.Kind != kind || string(in.ev.Marshal()) != string(pub[0]) {
		t.Fatalf("%s: delivered %+v, published another", what, in)
	}
	if _, err := ft.fx.Checker().Check(in.ev); err != nil {
		t.Fatalf("%s: the evidence does not check out: %v", what, err)
	}
}

// TestInvalidContentBecomesEvidence: a signed shard that fails the content checks is
// refused and becomes invalid-content evidence, once however often it is seen.
func TestInvalidContentBecomesEvidence(t *testing.T) {
	ft := newFullTest(t, 16, nil)
	alice := ft.fx.Bundle("alice", "")
	ft.holdBundle(alice)
	bad := ft.fx.Shard("alice", alice, 10, 0, []byte("bad payload"))
	ft.expect("bad content", p2p.KindShards, marshalShard(t, bad), p2p.Reject, reasonContent)
	ft.f.wg.Wait()
	if r, _ := ft.f.recheck(marshalShard(t, bad)); r != p2p.Reject {
		t.Fatalf("again: %v", r)
	}
	ft.f.wg.Wait()
	ft.wantEvidence(t, "bad content", true, incentives.KindInvalidContent)
}

// TestEvidenceThatDoesNotCheckOutRejected: evidence is re-checked before it reaches the
// loop; evidence that proves nothing is refused and counted.
func TestEvidenceThatDoesNotCheckOutRejected(t *testing.T) {
	ft := newFullTest(t, 16, nil)
	fx := ft.fx
	alice := fx.Bundle("alice", "")
	framed := incentives.NewInvalidAttestation(fx.Frame("victim", "attacker"),
		incentivestest.Signed(fx.Shard("attacker", fx.Frame("victim", "attacker"), 10, 0, []byte("payload"))))
	validContent := incentives.NewInvalidContent(alice, fx.Shard("alice", alice, 10, 0, []byte("payload")))
	for name, e := range map[string]*incentives.Evidence{"framing": framed, "content that is valid": validContent} {
		ft.expect(name, p2p.KindEvidence, e.Marshal(), p2p.Reject, reasonEvidence)
		ft.inboxEmpty(name)
	}
	ft.expect("too old", p2p.KindEvidence, fx.Equivocation("alice", 1, 0, "x").Marshal(), p2p.Ignore, reasonLate)
	ft.expect("too far ahead", p2p.KindEvidence, fx.Equivocation("alice", 40, 0, "x").Marshal(), p2p.Ignore, reasonFuture)
	ft.inboxEmpty("out of the window")
	good := fx.Equivocation("alice", 10, 0, "x")
	ft.expect("equivocation", p2p.KindEvidence, good.Marshal(), p2p.Accept, reasonOK)
	if in := (<-ft.inbox).(evidenceIn); in.ev.ID() != good.ID() {
		t.Fatal("other evidence delivered")
	}
}

// TestFullInboxIgnoresBusy: a full inbox never blocks a validator: the message is
// ignored as busy.
func TestFullInboxIgnoresBusy(t *testing.T) {
	ft := newFullTest(t, 1, nil)
	alice := ft.fx.Bundle("alice", "")
	ft.holdBundle(alice)
	ft.expect("first", p2p.KindShards, marshalShard(t, ft.fx.Shard("alice", alice, 10, 0, []byte("payload"))), p2p.Accept, reasonOK)
	second := marshalShard(t, ft.fx.Shard("alice", alice, 10, 1, []byte("payload")))
	ft.expect("inbox full", p2p.KindShards, second, p2p.Ignore, reasonBusy)
	ft.expect("evidence, inbox full", p2p.KindEvidence, ft.fx.Equivocation("alice", 10, 0, "x").Marshal(), p2p.Ignore, reasonBusy)
	<-ft.inbox
	if r, _ := ft.f.recheck(second); r != p2p.Accept || len(ft.inbox) != 1 {
		t.Fatalf("the busy shard, once there is room: %v, inbox %d", r, len(ft.inbox))
	}
}

// TestBundleOutOfItsEpochWindowIgnored: a bundle too old or too far ahead for the
// current epoch is ignored (it may verify at another epoch), as late or future.
func TestBundleOutOfItsEpochWindowIgnored(t *testing.T) {
	ft := newFullTest(t, 16, nil)
	ft.f.setView(core.View{NextClose: 30, NextLocal: 31, Window: 2, Epoch: 3})
	root := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	key := ft.fx.Key("alice")
	for _, c := range []struct {
		epoch  uint64
		reason string
	}{{0, reasonLate}, {5, reasonFuture}} {
		b, err := verify.NewSimBundle(root, incentivestest.GoodMeasurement, ft.fx.Network, ft.fx.Run, incentivestest.Identity("alice"), c.epoch, key.Public().(ed25519.PublicKey))
		if err != nil {
			t.Fatal(err)
		}
		data, err := b.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		ft.expect(fmt.Sprint("bundle of epoch ", c.epoch), p2p.KindAttest, data, p2p.Ignore, c.reason)
	}
}

// TestOwnEvidenceRetriedAfterBusyInbox: evidence the node made that found the inbox full
// is not lost to its own loop: the next sighting of the offence delivers it.
func TestOwnEvidenceRetriedAfterBusyInbox(t *testing.T) {
	ft := newFullTest(t, 1, nil)
	alice := ft.fx.Bundle("alice", "")
	ft.holdBundle(alice)
	ft.inbox <- "something the loop has not read yet"
	bad := marshalShard(t, ft.fx.Shard("alice", alice, 10, 0, []byte("bad payload")))
	ft.expect("bad content, inbox full", p2p.KindShards, bad, p2p.Reject, reasonContent)
	ft.f.wg.Wait()
	<-ft.inbox
	if r, _ := ft.f.recheck(bad); r != p2p.Reject {
		t.Fatalf("again: %v", r)
	}
	ft.f.wg.Wait()
	if len(ft.inbox) != 1 {
		t.Fatal("the evidence never reached the loop")
	}
	if in, ok := (<-ft.inbox).(evidenceIn); !ok || in.ev.Kind != incentives.KindInvalidContent {
		t.Fatalf("inbox got %+v", in)
	}
}
