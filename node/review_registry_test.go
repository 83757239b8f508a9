package node

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/lowband/lowband/incentives/incentivestest"
	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/verify"
)

// freshBundles returns n valid sim bundles of one peer for epoch 0 under the fixture's
// root, each attesting a fresh ephemeral key: what one attested identity can make at will.
func freshBundles(t *testing.T, fx *incentivestest.Fixture, peerName string, n int) [][]byte {
	t.Helper()
	seed := sha256.Sum256([]byte("incentivestest/key/sim-root"))
	root := ed25519.NewKeyFromSeed(seed[:])
	out := make([][]byte, n)
	for i := range out {
		var s [ed25519.SeedSize]byte
		binary.BigEndian.PutUint64(s[:], uint64(i))
		eph := ed25519.NewKeyFromSeed(s[:]).Public().(ed25519.PublicKey)
		b, err := verify.NewSimBundle(root, incentivestest.GoodMeasurement, fx.Network, fx.Run, incentivestest.Identity(peerName), 0, eph)
		if err != nil {
			t.Fatal(err)
		}
		if out[i], err = b.Marshal(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestOneIdentitysBundleFloodKeepsHonestBundles: one attested identity publishing as many
// valid bundles as the registry holds (a fresh ephemeral key each) does not push an honest
// peer's bundle out of it: the honest peer's next shard is still checked and delivered, not
// stashed waiting for a bundle nobody holds any more.
func TestOneIdentitysBundleFloodKeepsHonestBundles(t *testing.T) {
	ft := newFullTest(t, 16, nil)
	alice := ft.fx.Bundle("alice", "")
	ft.holdBundle(alice)
	for i, b := range freshBundles(t, ft.fx, "mallory", maxVerifiedBundles) {
		if r := ft.validate(p2p.KindAttest, b); r != p2p.Accept {
			t.Fatalf("mallory's bundle %d: %v", i, r)
		}
	}
	s := marshalShard(t, ft.fx.Shard("alice", alice, 10, 0, []byte("payload")))
	ft.expect("alice's shard after the flood", p2p.KindShards, s, p2p.Accept, reasonOK)
	if b := ft.f.reg.bundle(sha256Bundle(t, alice)); b == nil {
		t.Fatal("alice's bundle is no longer served")
	}
	if n, m := ft.f.reg.ok.order.Len(), len(ft.f.reg.byPeer[incentivestest.PeerID("mallory")]); n != 1+maxBundlesPerPeer || m != maxBundlesPerPeer {
		t.Fatal(fmt.Sprint("registry holds ", n, " bundles, ", m, " of mallory's; want alice's and ", maxBundlesPerPeer, " of mallory's"))
	}
}

// sha256Bundle is the hash of an encoded bundle.
func sha256Bundle(t *testing.T, data []byte) [32]byte {
	t.Helper()
	b, err := verify.UnmarshalBundle(data)
	if err != nil {
		t.Fatal(err)
	}
	return b.Hash()
}
