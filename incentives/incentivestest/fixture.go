// Package incentivestest builds signed shards, bundles and evidence for tests of the ledger
// and of what stores it. Bundles are sim bundles whose verification is decided by a test
// double of the verifier (Fixture.Checker): the evidence bytes name the verdict.
package incentivestest

import (
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/verify"
)

// Fixture makes evidence for one network and run. Keys derive from peer names, so two
// fixtures make the same bytes.
type Fixture struct {
	Network, Run string
}

// New returns a fixture for network and run.
func New(network, run string) *Fixture { return &Fixture{Network: network, Run: run} }

// Key is peer's ephemeral key.
func (f *Fixture) Key(peer string) ed25519.PrivateKey {
	seed := sha256.Sum256([]byte("incentivestest/key/" + peer))
	return ed25519.NewKeyFromSeed(seed[:])
}

// Bundle returns the encoded bundle of peer. The test verifier accepts it when fail is ""
// and otherwise fails it with class fail.
func (f *Fixture) Bundle(peer string, fail verify.Class) []byte {
	ev := "ok"
	if fail != "" {
		ev = string(fail)
	}
	b := &verify.Bundle{
		Version: verify.BundleVersion, Kind: verify.KindSim, Evidence: []byte(ev),
		EphemeralKey: f.Key(peer).Public().(ed25519.PublicKey), PeerID: peer, Network: f.Network, Run: f.Run,
	}
	out, err := b.Marshal()
	if err != nil {
		panic(fmt.Sprintf("incentivestest: bundle: %v", err))
	}
	return out
}

// Checker returns a checker whose bundle verifier fails a bundle with the class written in
// its evidence (accepting "ok"), and whose content check fails payloads that start with "bad".
func (f *Fixture) Checker() *incentives.Checker {
	return &incentives.Checker{
		Network: f.Network, Run: f.Run,
		VerifyBundle: func(b *verify.Bundle) error {
			if string(b.Evidence) == "ok" {
				return nil
			}
			return &verify.Error{Class: verify.Class(b.Evidence), Detail: "test verdict"}
		},
		ContentCheck: func(p []byte) error {
			if len(p) >= 3 && string(p[:3]) == "bad" {
				return fmt.Errorf("test content check: bad payload")
			}
			return nil
		},
	}
}

// Shard returns a shard of peer for round and index, signed under bundle.
func (f *Fixture) Shard(peer string, bundle []byte, round uint64, index uint32, payload []byte) *verify.Shard {
	b, err := verify.UnmarshalBundle(bundle)
	if err != nil {
		panic(fmt.Sprintf("incentivestest: bundle: %v", err))
	}
	bh := b.Hash()
	h := verify.ShardHeader{Network: f.Network, Run: f.Run, Round: round, Peer: peer, Index: index, Count: index + 1, BundleHash: bh[:]}
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
	c := incentives.Contribution{Peer: peer}
	for i := range n {
		c.Shards = append(c.Shards, verify.PayloadCID(fmt.Appendf(nil, "%s/%d/%d", peer, round, i)))
	}
	return c
}
