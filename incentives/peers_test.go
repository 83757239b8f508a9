package incentives_test

import (
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
	"sync"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
)

var testPeers sync.Map // int -> string

// testPeer is the canonical peer ID of test identity i: an Ed25519 key from a fixed seed.
func testPeer(i int) string {
	if v, ok := testPeers.Load(i); ok {
		return v.(string)
	}
	seed := sha256.Sum256(fmt.Appendf(nil, "incentives test peer %d", i))
	priv, err := crypto.UnmarshalEd25519PrivateKey(ed25519.NewKeyFromSeed(seed[:]))
	if err != nil {
		panic(err)
	}
	id, err := peer.IDFromPrivateKey(priv)
	if err != nil {
		panic(err)
	}
	testPeers.Store(i, id.String())
	return id.String()
}
