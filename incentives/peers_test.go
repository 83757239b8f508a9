package incentives_test

import (
	"crypto/sha256"
	"fmt"
	"sync"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
)

var testPeers sync.Map // int -> string

// testPeer is the canonical peer ID of test identity i, which embeds an Ed25519 public key
// made from a hash (no private key: these peers only need names).
func testPeer(i int) string {
	if v, ok := testPeers.Load(i); ok {
		return v.(string)
	}
	raw := sha256.Sum256(fmt.Appendf(nil, "incentives test peer %d", i))
	pub, err := crypto.UnmarshalEd25519PublicKey(raw[:])
	if err != nil {
		panic(err)
	}
	id, err := peer.IDFromPublicKey(pub)
	if err != nil {
		panic(err)
	}
	testPeers.Store(i, id.String())
	return id.String()
}
