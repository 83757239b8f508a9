// Package incentivestest builds signed shards, real sim attestation bundles and evidence
// for tests of the ledger and of what stores it. Everything derives from names, so two
// fixtures make the same bytes. A name stands for a peer whose libp2p identity key is
// Identity(name) and whose peer ID is PeerID(name): evidence and contributions name peers
// by PeerID.
package incentivestest

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/verify"
)

// Fixture makes evidence for one network and run, under a sim root it owns.
type Fixture struct {
	Network, Run string
}

// New returns a fixture for network and run.
func New(network, run string) *Fixture { return &Fixture{Network: network, Run: run} }

func key(name string) ed25519.PrivateKey {
	seed := sha256.Sum256([]byte("incentivestest/key/" + name))
	return ed25519.NewKeyFromSeed(seed[:])
}

// Key is peer's ephemeral key.
func (f *Fixture) Key(peer string) ed25519.PrivateKey { return key("peer/" + peer) }

// Identity is the libp2p identity key of the peer called name.
func Identity(name string) crypto.PrivKey {
	k, err := crypto.UnmarshalEd25519PrivateKey(key("identity/" + name))
	if err != nil {
		panic(fmt.Sprintf("incentivestest: identity: %v", err)) // 64-byte keys always unmarshal
	}
	return k
}

// PeerID is the canonical peer ID of the peer called name.
func PeerID(name string) string {
	id, err := peer.IDFromPrivateKey(Identity(name))
	if err != nil {
		panic(fmt.Sprintf("incentivestest: peer ID: %v", err))
	}
	return id.String()
}

// Measurements: the one the fixture's policy allows, and one it does not.
var (
	GoodMeasurement = bytes.Repeat([]byte{1}, verify.MeasurementSize)
	BadMeasurement  = bytes.Repeat([]byte{2}, verify.MeasurementSize)
)

func (f *Fixture) root() ed25519.PrivateKey { return key("sim-root") }

// Policy is the fixture's attestation policy: sim evidence from its root, GoodMeasurement only.
func (f *Fixture) Policy() *verify.Policy {
	return &verify.Policy{
		Network: f.Network, Run: f.Run, Kinds: []verify.Kind{verify.KindSim}, AllowSim: true,
		SimRoots:        [][]byte{f.root().Public().(ed25519.PublicKey)},
		SimMeasurements: [][]byte{GoodMeasurement}, MaxAgeEpochs: 1,
	}
}

// Bundle returns peer's encoded sim bundle, signed by peer's identity. With fail "" it
// verifies under Policy; else it fails verification with class fail:
//   - measurement_not_allowed: a genuine report, bound to peer, of a measurement not allowed
//     (provable);
//   - binding_mismatch: a report of a measurement not allowed, bound to another peer and
//     wrapped in a bundle naming peer;
//   - untrusted_root: a report signed by a root the network does not name.
func (f *Fixture) Bundle(peer string, fail verify.Class) []byte {
	root, m, boundTo := f.root(), GoodMeasurement, PeerID(peer)
	switch fail {
	case "":
	case verify.ClassMeasurementNotAllowed:
		m = BadMeasurement
	case verify.ClassBindingMismatch:
		m, boundTo = BadMeasurement, PeerID("someone else")
	case verify.ClassUntrustedRoot:
		root, m = key("other-root"), BadMeasurement
	default:
		panic(fmt.Sprintf("incentivestest: cannot make a bundle failing with %q", fail))
	}
	return f.encode(f.simBundle(root, m, boundTo, PeerID(peer), f.Key(peer)), Identity(peer))
}

// SecondKey is peer's ephemeral key of its second bundle (SecondBundle).
func (f *Fixture) SecondKey(peer string) ed25519.PrivateKey { return key("peer2/" + peer) }

// SecondBundle returns a second valid bundle of peer for the same epoch, attesting
// SecondKey(peer): a peer may attest two keys in one epoch.
func (f *Fixture) SecondBundle(peer string) []byte {
	id := PeerID(peer)
	return f.encode(f.simBundle(f.root(), GoodMeasurement, id, id, f.SecondKey(peer)), Identity(peer))
}

// Frame returns the bundle an attacker makes to frame victim: genuine sim evidence (the
// network's root) of a measurement not allowed, bound to the victim's peer ID and the
// attacker's ephemeral key (Key(attacker)), signed by the attacker's identity, since the
// attacker does not hold the victim's.
func (f *Fixture) Frame(victim, attacker string) []byte {
	v := PeerID(victim)
	return f.encode(f.simBundle(f.root(), BadMeasurement, v, v, f.Key(attacker)), Identity(attacker))
}

// simBundle is a bundle naming peerID whose sim evidence binds boundTo.
func (f *Fixture) simBundle(root ed25519.PrivateKey, m []byte, boundTo, peerID string, eph ed25519.PrivateKey) *verify.Bundle {
	pub := eph.Public().(ed25519.PublicKey)
	seed := verify.EpochSeed(f.Network, f.Run, 0)
	ev, err := verify.SignSimEvidence(root, m, verify.ReportData(f.Network, f.Run, boundTo, pub, seed[:]))
	if err != nil {
		panic(fmt.Sprintf("incentivestest: sim evidence: %v", err))
	}
	return &verify.Bundle{Version: verify.BundleVersion, Kind: verify.KindSim, Evidence: ev,
		EphemeralKey: pub, PeerID: peerID, Network: f.Network, Run: f.Run}
}

// encode signs b's binding with identity (whoever that is) and encodes it.
func (f *Fixture) encode(b *verify.Bundle, identity crypto.PrivKey) []byte {
	sig, err := identity.Sign(b.IdentityMessage())
	if err != nil {
		panic(fmt.Sprintf("incentivestest: identity signature: %v", err))
	}
	b.IdentitySig = sig
	out, err := b.Marshal()
	if err != nil {
		panic(fmt.Sprintf("incentivestest: bundle: %v", err))
	}
	return out
}

// Checker returns a checker with the fixture's policy and a content check that fails
// payloads starting with "bad".
func (f *Fixture) Checker() *incentives.Checker {
	return &incentives.Checker{
		Network: f.Network, Run: f.Run, Policy: f.Policy(),
		EpochTime: func(uint64) time.Time { return time.Unix(1_800_000_000, 0) },
		ContentCheck: func(p []byte) error {
			if bytes.HasPrefix(p, []byte("bad")) {
				return fmt.Errorf("test content check: bad payload")
			}
			return nil
		},
	}
}

// Shard returns a shard of peer for round and index, signed with Key(peer) under bundle; the
// header names the bundle's peer.
func (f *Fixture) Shard(peer string, bundle []byte, round uint64, index uint32, payload []byte) *verify.Shard {
	b, err := verify.UnmarshalBundle(bundle)
	if err != nil {
		panic(fmt.Sprintf("incentivestest: bundle: %v", err))
	}
	bh := b.Hash()
	h := verify.ShardHeader{Network: f.Network, Run: f.Run, Round: round, Peer: b.PeerID, Index: index, Count: index + 1, BundleHash: bh[:]}
	s, err := verify.SignShard(f.Key(peer), h, payload)
	if err != nil {
		panic(fmt.Sprintf("incentivestest: signing: %v", err))
	}
	return s
}

// Signed returns the signed header of a shard.
func Signed(s *verify.Shard) incentives.SignedHeader {
	return incentives.SignedHeader{Header: s.Header, Sig: s.Sig}
}

// Equivocation is evidence that peer signed two payloads (told apart by variant) for one
// round and index under a valid bundle.
func (f *Fixture) Equivocation(peer string, round uint64, index uint32, variant string) *incentives.Evidence {
	b := f.Bundle(peer, "")
	x := f.Shard(peer, b, round, index, []byte("payload"))
	y := f.Shard(peer, b, round, index, []byte("payload "+variant))
	return incentives.NewEquivocation(b, Signed(x), Signed(y))
}

// InvalidAttestation is evidence that peer signed a shard under a bundle failing with class.
func (f *Fixture) InvalidAttestation(peer string, round uint64, class verify.Class) *incentives.Evidence {
	b := f.Bundle(peer, class)
	return incentives.NewInvalidAttestation(b, Signed(f.Shard(peer, b, round, 0, []byte("payload"))))
}

// InvalidContent is evidence that peer signed a bad payload under a valid bundle.
func (f *Fixture) InvalidContent(peer string, round uint64, index uint32) *incentives.Evidence {
	b := f.Bundle(peer, "")
	return incentives.NewInvalidContent(b, f.Shard(peer, b, round, index, []byte("bad payload")))
}

// Contribution is peer's contribution of n shards to round.
func (f *Fixture) Contribution(peer string, round uint64, n int) incentives.Contribution {
	c := incentives.Contribution{Peer: PeerID(peer)}
	for i := range n {
		c.Shards = append(c.Shards, verify.PayloadCID(fmt.Appendf(nil, "%s/%d/%d", peer, round, i)))
	}
	return c
}
