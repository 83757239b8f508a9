package incentives_test

import (
	"crypto/sha256"
	"strconv"
	"sync"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
)

var (
	testIDs   sync.Map // name -> canonical peer ID
	testNames sync.Map // canonical peer ID -> name
)

// pid is the canonical peer ID of the test peer called name. It embeds an Ed25519 public
// key made from a hash of the name (no private key: ledger tests only need names).
func pid(name string) string {
	if v, ok := testIDs.Load(name); ok {
		return v.(string)
	}
	raw := sha256.Sum256([]byte("incentives test peer " + name))
	pub, err := crypto.UnmarshalEd25519PublicKey(raw[:])
	if err != nil {
		panic(err)
	}
	id, err := peer.IDFromPublicKey(pub)
	if err != nil {
		panic(err)
	}
	testIDs.Store(name, id.String())
	testNames.Store(id.String(), name)
	return id.String()
}

// nameOf is the test name of a peer ID made by pid, or the ID itself.
func nameOf(id string) string {
	if v, ok := testNames.Load(id); ok {
		return v.(string)
	}
	return id
}

// testPeer is the canonical peer ID of numbered test identity i.
func testPeer(i int) string { return pid(strconv.Itoa(i)) }
