package incentives_test

import (
	"strconv"
	"sync"

	"github.com/lowband/lowband/incentives/incentivestest"
)

var (
	testIDs   sync.Map // name -> canonical peer ID
	testNames sync.Map // canonical peer ID -> name
)

// pid is the canonical peer ID of the test peer called name. It embeds an Ed25519 public
// key of the fixture identity of that name.
func pid(name string) string {
	if v, ok := testIDs.Load(name); ok {
		return v.(string)
	}
	id := incentivestest.PeerID(name)
	testIDs.Store(name, id)
	testNames.Store(id, name)
	return id
}

// nameOf is the test name of a peer ID made by pid, or the ID itself.
func nameOf(id string) string {
	if v, ok := testNames.Load(id); ok {
		return v.(string)
	}
	return id
}

// testPeer is the canonical peer ID of numbered test identity i.
func testPeer(i int) string { return pid(testPeerName(i)) }

// testPeerName is the fixture name of testPeer(i).
func testPeerName(i int) string { return strconv.Itoa(i) }
