package p2ptest

import (
	"sync/atomic"

	"github.com/libp2p/go-libp2p/core/connmgr"
	"github.com/libp2p/go-libp2p/core/control"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/lowband/lowband/p2p"
)

// Gate is a connection gater (p2p.Config.Gater) that a test closes to cut its host off
// the network, a partition, and opens again. Open, it lets every connection through;
// cut, it refuses every dial and every incoming connection at each step of the
// upgrade. The zero Gate is open. Safe for concurrent use.
type Gate struct {
	cut atomic.Bool
}

var _ connmgr.ConnectionGater = (*Gate)(nil)

// Cut closes the gate and then every connection h has: h is alone until Restore.
func (g *Gate) Cut(h *p2p.Host) {
	g.cut.Store(true)
	for _, p := range h.ConnectedPeers() {
		_ = h.ClosePeer(p)
	}
}

// Restore opens the gate. The host does not reconnect by itself at once: its
// bootstrap loop notices it is alone within seconds, or the test calls Connect.
func (g *Gate) Restore() { g.cut.Store(false) }

func (g *Gate) open() bool { return !g.cut.Load() }

func (g *Gate) InterceptPeerDial(peer.ID) bool               { return g.open() }
func (g *Gate) InterceptAddrDial(peer.ID, ma.Multiaddr) bool { return g.open() }
func (g *Gate) InterceptAccept(network.ConnMultiaddrs) bool  { return g.open() }
func (g *Gate) InterceptSecured(network.Direction, peer.ID, network.ConnMultiaddrs) bool {
	return g.open()
}
func (g *Gate) InterceptUpgraded(network.Conn) (bool, control.DisconnectReason) {
	return g.open(), 0
}
