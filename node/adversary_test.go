package node

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/node/core"
	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/p2p/p2ptest"
	"github.com/lowband/lowband/training"
	"github.com/lowband/lowband/training/compress"
	"github.com/lowband/lowband/training/round"
	"github.com/lowband/lowband/verify"
)

// TestAdversaryRefusedUnlessSpecAllows: a node refuses to run an adversary mode on a
// network that does not allow them, refuses an unknown kind, and under the public profile
// refuses a network that allows them even when it runs none.
func TestAdversaryRefusedUnlessSpecAllows(t *testing.T) {
	h, c, s := newHome(t)
	quiet := slog.New(slog.DiscardHandler)
	_, err := New(context.Background(), Options{Home: h, Config: c, Spec: s, Logger: quiet, Adversary: AdvSignFlip})
	if !errors.Is(err, ErrAdversariesNotAllowed) {
		t.Fatalf("sign-flip on a network without [testing] allow_adversaries: %v", err)
	}
	s.Testing.AllowAdversaries = true
	_, err = New(context.Background(), Options{Home: h, Config: c, Spec: s, Logger: quiet, Adversary: "polite"})
	if err == nil || !strings.Contains(err.Error(), "unknown adversary kind") {
		t.Fatalf("unknown kind: %v", err)
	}
	c.Profile = configs.ProfilePublic
	if err := CheckAdversary("", c, s); err == nil || !strings.Contains(err.Error(), "allows adversary modes") {
		t.Fatalf("public profile on a network allowing adversaries: %v", err)
	}
}

// advFixture is an adversary of one kind with a sim signer and a real contribution of the
// synthetic task, signed and split into shards by a core as the node's would be.
type advFixture struct {
	a      *adversary
	p      *Params
	signer core.Signer
	shards [][]byte // the honest signed shards of round 0
	sent   map[string][][]byte
}

func newAdvFixture(t *testing.T, kind string, s *configs.Spec) *advFixture {
	t.Helper()
	key := p2ptest.Key()
	id, _ := peer.IDFromPrivateKey(key)
	if s == nil {
		s = syntheticSpec(t, map[string]uint64{id.String(): 100})
	}
	p, err := NewParams(s)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := configs.Default(configs.ProfileLocal)
	if err != nil {
		t.Fatal(err)
	}
	a, err := newAdversary(kind, key, s, cfg.Attest, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := &advFixture{a: a, p: p, sent: map[string][][]byte{}}
	f.signer, err = a.attest(context.Background(), simSigner(t, s, key), f.publish, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.shards = honestShards(t, p, s, key, f.signer)
	return f
}

func (f *advFixture) publish(_ context.Context, kind string, data []byte) error {
	f.sent[kind] = append(f.sent[kind], data)
	return nil
}

// honestShards is round 0's contribution of a node, as its core signs it.
func honestShards(t *testing.T, p *Params, s *configs.Spec, key crypto.PrivKey, sg core.Signer) [][]byte {
	t.Helper()
	st, err := p.Initial()
	if err != nil {
		t.Fatal(err)
	}
	led, err := p.GenesisState()
	if err != nil {
		t.Fatal(err)
	}
	c, err := newCore(p, s, key, st, led)
	if err != nil {
		t.Fatal(err)
	}
	c.SetSigner(sg)
	if _, err := c.Start(time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	local := training.Snapshot(nil)
	for _, x := range st.Params {
		d := slices.Clone(x.Data)
		for i := range d {
			d[i] -= 0.01 * float64(i%7-3)
		}
		local = append(local, training.Tensor{Name: x.Name, Shape: x.Shape, Data: d})
	}
	rd, err := c.LocalDone(time.Unix(0, 0), 0, local)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, m := range rd.Publish {
		if m.Kind == core.KindShards {
			out = append(out, m.Data)
		}
	}
	if len(out) == 0 {
		t.Fatal("no shards")
	}
	return out
}

// sendOwn hands the adversary the node's own shards of round 0 and returns what it sent.
func (f *advFixture) sendOwn(t *testing.T) []*verify.Shard {
	t.Helper()
	for _, d := range f.shards {
		if err := f.a.publish(context.Background(), f.publish, p2p.KindShards, d); err != nil {
			t.Fatal(err)
		}
	}
	var out []*verify.Shard
	for _, d := range f.sent[p2p.KindShards] {
		s, err := verify.UnmarshalShard(d, f.a.max)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// signedBySigner fails unless s is signed by the fixture's epoch key.
func (f *advFixture) signedBySigner(t *testing.T, s *verify.Shard) {
	t.Helper()
	if err := verify.CheckShardSignature(s, f.signer.Key.Public().(ed25519.PublicKey)); err != nil {
		t.Fatalf("shard of round %d index %d not signed by the epoch key: %v", s.Header.Round, s.Header.Index, err)
	}
}

// TestAdversaryNaNReachesTheWire: a nan node sends each shard with a NaN in its values,
// well signed by its epoch key for the same slot, which every receiver's content check
// refuses as not finite; its own validators let it through.
func TestAdversaryNaNReachesTheWire(t *testing.T) {
	f := newAdvFixture(t, AdvNaN, nil)
	sent := f.sendOwn(t)
	if len(sent) != len(f.shards) {
		t.Fatalf("sent %d shards for %d", len(sent), len(f.shards))
	}
	for i, s := range sent {
		f.signedBySigner(t, s)
		if err := f.p.CheckContent(s.Payload); !errors.Is(err, compress.ErrNotFinite) {
			t.Fatalf("shard %d: content check says %v, want not finite", i, err)
		}
		if !f.a.crafted(f.sent[p2p.KindShards][i]) {
			t.Fatal("its own validators would refuse the shard")
		}
	}
}

// TestAdversaryEquivocateSendsTwoValidShardsPerSlot: an equivocating node sends, for each
// of its slots of round equivocateAt, a second shard and then its own, both signed by its
// epoch key and both passing the content check, with different payloads, the first
// claiming one shard more; its other rounds' shards go out as they are.
func TestAdversaryEquivocateSendsTwoValidShardsPerSlot(t *testing.T) {
	f := newAdvFixture(t, AdvEquivocate, nil)
	for i := range f.shards {
		f.shards[i] = rerounded(t, f, f.shards[i], equivocateAt)
	}
	sent := f.sendOwn(t)
	if len(sent) != 2*len(f.shards) {
		t.Fatalf("sent %d shards for %d slots", len(sent), len(f.shards))
	}
	for i := 0; i < len(sent); i += 2 {
		b, a := sent[i], sent[i+1]
		if !bytes.Equal(f.sent[p2p.KindShards][i+1], f.shards[i/2]) || b.Header.Count != a.Header.Count+1 {
			t.Fatalf("slot %d: not the second shard (count %d) and then its own (count %d)", i/2, b.Header.Count, a.Header.Count)
		}
		if a.Header.Round != b.Header.Round || a.Header.Peer != b.Header.Peer || a.Header.Index != b.Header.Index {
			t.Fatalf("not one slot: %+v and %+v", a.Header, b.Header)
		}
		if bytes.Equal(a.Header.PayloadCID, b.Header.PayloadCID) {
			t.Fatal("the two shards of a slot carry the same payload")
		}
		for _, s := range []*verify.Shard{a, b} {
			f.signedBySigner(t, s)
			if err := f.p.CheckContent(s.Payload); err != nil {
				t.Fatalf("shard fails the content check: %v", err)
			}
		}
	}
	for _, r := range []uint64{0, equivocateAt + 1} {
		other := rerounded(t, f, f.shards[0], r)
		before := len(f.sent[p2p.KindShards])
		if err := f.a.publish(context.Background(), f.publish, p2p.KindShards, other); err != nil {
			t.Fatal(err)
		}
		if got := f.sent[p2p.KindShards][before:]; len(got) != 1 || !bytes.Equal(got[0], other) {
			t.Fatalf("round %d: sent %d shards, want its own only", r, len(got))
		}
	}
}

// rerounded is a shard's payload in a shard for round r, signed by the fixture's key.
func rerounded(t *testing.T, f *advFixture, data []byte, r uint64) []byte {
	t.Helper()
	s, err := verify.UnmarshalShard(data, f.a.max)
	if err != nil {
		t.Fatal(err)
	}
	h := s.Header
	h.Round = r
	sh, err := verify.SignShard(f.signer.Key, h, s.Payload)
	if err != nil {
		t.Fatal(err)
	}
	out, err := sh.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestAdversarySilentSendsNoShard: a silent node publishes no shard, and its bundle as
// an honest node does.
func TestAdversarySilentSendsNoShard(t *testing.T) {
	f := newAdvFixture(t, AdvSilent, nil)
	if sent := f.sendOwn(t); len(sent) != 0 {
		t.Fatalf("a silent node sent %d shards", len(sent))
	}
	if err := f.a.publish(context.Background(), f.publish, p2p.KindRecords, []byte("record")); err != nil || len(f.sent[p2p.KindRecords]) != 1 {
		t.Fatalf("other topics: %v %d", err, len(f.sent[p2p.KindRecords]))
	}
}

// TestAdversaryReplaySendsOldRoundsShards: a replaying node sends, when its shards of
// round r are due, its shards of round r−3 unchanged, and nothing of the round itself.
func TestAdversaryReplaySendsOldRoundsShards(t *testing.T) {
	f := newAdvFixture(t, AdvReplay, nil)
	byRound := map[uint64][]byte{}
	for r := uint64(0); r < 6; r++ {
		byRound[r] = rerounded(t, f, f.shards[0], r)
		before := len(f.sent[p2p.KindShards])
		if err := f.a.publish(context.Background(), f.publish, p2p.KindShards, byRound[r]); err != nil {
			t.Fatal(err)
		}
		got := f.sent[p2p.KindShards][before:]
		switch {
		case r < replayLag && len(got) != 0:
			t.Fatalf("round %d: sent %d shards, nothing to replay yet", r, len(got))
		case r >= replayLag && (len(got) != 1 || !bytes.Equal(got[0], byRound[r-replayLag])):
			t.Fatalf("round %d: sent %d shards, want round %d's", r, len(got), r-replayLag)
		}
	}
	if len(f.a.held) > replayLag+1 {
		t.Fatalf("holds %d rounds", len(f.a.held))
	}
}

// TestAdversaryForgedAttestationFailsVerification: a forged-attestation node publishes a
// bundle for its epoch key whose evidence does not verify under the network's policy:
// with a sim measurement allow-list, its own root claims a measurement off the list
// (provable, so its shards are evidence); without one, a root the network does not name
// signs it.
func TestAdversaryForgedAttestationFailsVerification(t *testing.T) {
	for _, c := range []struct {
		name string
		list []string
		want verify.Class
	}{
		{"allow-list", []string{strings.Repeat("00", verify.MeasurementSize)}, verify.ClassMeasurementNotAllowed},
		{"no allow-list", nil, verify.ClassUntrustedRoot},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := syntheticSpec(t, nil)
			s.Attest.SimMeasurements = c.list
			f := newAdvFixture(t, AdvForged, s)
			bundles := f.sent[p2p.KindAttest]
			if len(bundles) != 1 || !bytes.Equal(bundles[0], f.signer.Bundle) || !f.a.crafted(bundles[0]) {
				t.Fatalf("published %d bundles", len(bundles))
			}
			b, err := verify.UnmarshalBundle(bundles[0])
			if err != nil {
				t.Fatal(err)
			}
			seed := verify.EpochSeed(b.Network, b.Run, b.Epoch)
			_, err = verify.Verify(b, f.p.Checker.Policy, seed[:], 0, f.p.Checker.EpochTime(0))
			if verify.ClassOf(err) != c.want {
				t.Fatalf("forged bundle: %v, want class %s", err, c.want)
			}
			if !bytes.Equal(b.EphemeralKey, f.signer.Key.Public().(ed25519.PublicKey)) {
				t.Fatal("the bundle does not bind the signer's key")
			}
			for _, s := range f.sendOwn(t) {
				if !bytes.Equal(s.Header.BundleHash, f.signer.BundleHash[:]) {
					t.Fatal("a shard names another bundle")
				}
			}
		})
	}
}

// TestAdversaryValidatorsPassOnlyOwnCraftedMessages: an adversary's validators let
// through what it crafted and publishes itself; the same bytes from a neighbour, and its
// own other messages, get the usual checks.
func TestAdversaryValidatorsPassOnlyOwnCraftedMessages(t *testing.T) {
	f := newAdvFixture(t, AdvNaN, nil)
	f.sendOwn(t)
	crafted := f.sent[p2p.KindShards][0]
	checked := 0
	vs := map[string]p2p.Validator{p2p.KindShards: func(context.Context, peer.ID, []byte) p2p.Result {
		checked++
		return p2p.Reject
	}}
	f.a.validators(vs)
	other, _ := peer.Decode(testPeerID(t))
	v := vs[p2p.KindShards]
	if v(context.Background(), f.a.id, crafted) != p2p.Accept || checked != 0 {
		t.Fatal("its own crafted shard was checked")
	}
	if v(context.Background(), other, crafted) != p2p.Reject || v(context.Background(), f.a.id, f.shards[0]) != p2p.Reject || checked != 2 {
		t.Fatal("a neighbour's copy or an uncrafted message skipped the checks")
	}
}

// TestAdversaryFreeRideContributionEncodes: a free rider's zero pseudo-gradient is still a
// contribution its core can compress, sign and send, which passes the content check.
func TestAdversaryFreeRideContributionEncodes(t *testing.T) {
	key := p2ptest.Key()
	id, _ := peer.IDFromPrivateKey(key)
	s := syntheticSpec(t, map[string]uint64{id.String(): 100})
	p, err := NewParams(s)
	if err != nil {
		t.Fatal(err)
	}
	st, err := p.Initial()
	if err != nil {
		t.Fatal(err)
	}
	a := &adversary{kind: AdvFreeRide, self: id.String()}
	local, err := a.update(round.Start{Params: st.Params}, st.Params)
	if err != nil {
		t.Fatal(err)
	}
	led, _ := p.GenesisState()
	c, err := newCore(p, s, key, st, led)
	if err != nil {
		t.Fatal(err)
	}
	sg, err := simSigner(t, s, key)(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	c.SetSigner(sg)
	if _, err := c.Start(time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	rd, err := c.LocalDone(time.Unix(0, 0), 0, local)
	if err != nil {
		t.Fatalf("a zero contribution: %v", err)
	}
	for _, m := range rd.Publish {
		if m.Kind != core.KindShards { // a record, when the round closes at once
			continue
		}
		sh, err := verify.UnmarshalShard(m.Data, s.Training.Compression.MaxShardBytes)
		if err != nil || p.CheckContent(sh.Payload) != nil {
			t.Fatalf("free rider's shard: %v", err)
		}
	}
}
