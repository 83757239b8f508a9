package verify_test

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"

	"github.com/lowband/lowband/verify"
)

// A peer attests its ephemeral key with (simulated) evidence and signs a shard with it; a
// receiver verifies the bundle once, caches the verdict, and checks the shard against the
// attested key.
func Example() {
	root := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, 32)) // the network's sim root
	eph := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{2}, 32))  // the peer's key for epoch 7
	// The peer's libp2p identity key: it signs the bundle, and its peer ID names the peer.
	identity, _ := crypto.UnmarshalEd25519PrivateKey(ed25519.NewKeyFromSeed(bytes.Repeat([]byte{3}, 32)))
	network, run := "testnet-1a2b3c4d", "run-1"

	bundle, _ := verify.NewSimBundle(root, make([]byte, verify.MeasurementSize), network, run, identity, 7, eph.Public().(ed25519.PublicKey))
	shard, _ := verify.SignShard(eph, verify.ShardHeader{
		Network: network, Run: run, Round: 700, Peer: bundle.PeerID, Index: 0, Count: 1,
		BundleHash: func() []byte { h := bundle.Hash(); return h[:] }(),
	}, []byte("gradient"))

	policy := &verify.Policy{Network: network, Run: run, AllowSim: true,
		SimRoots: [][]byte{root.Public().(ed25519.PublicKey)}, MaxAgeEpochs: 1}
	cache := verify.NewCache(128)
	seed := verify.EpochSeed(network, run, bundle.Epoch)
	v, hit, err := cache.VerifyCached(bundle, policy, seed[:], 7, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		fmt.Println("rejected:", verify.ClassOf(err))
		return
	}
	fmt.Println("bundle:", v.Kind, "insecure:", v.Insecure, "cached:", hit)
	fmt.Println("shard:", verify.CheckShardSignature(shard, v.EphemeralKey))
	// Output:
	// bundle: sim insecure: true cached: false
	// shard: <nil>
}
