package p2ptest

import (
	"sync"

	"github.com/libp2p/go-libp2p/core/connmgr"
	"github.com/libp2p/go-libp2p/core/control"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/lowband/lowband/p2p"
)

// Fence is a connection gater (p2p.Config.Gater) that a test raises to keep its host
// away from some peers, the other side of a partition, and lowers again. Lowered, it lets
// every connection through; raised, it refuses every dial to those peers and every
// connection from them once their identity is known (an incoming connection is accepted
// up to its handshake). The zero Fence is lowered. Safe for concurrent use.
type Fence struct {
	mu  sync.RWMutex
	out map[peer.ID]bool
}

var _ connmgr.ConnectionGater = (*Fence)(nil)

// Raise keeps h away from peers: it refuses them from now on and closes every
// connection h has to them, until Lower.
func (f *Fence) Raise(h *p2p.Host, peers ...peer.ID) {
	f.mu.Lock()
	f.out = map[peer.ID]bool{}
	for _, p := range peers {
		f.out[p] = true
	}
	f.mu.Unlock()
	for _, p := range peers {
		_ = h.ClosePeer(p)
	}
}

// Lower lets every peer through again. The host does not reconnect by itself at once.
func (f *Fence) Lower() {
	f.mu.Lock()
	f.out = nil
	f.mu.Unlock()
}

func (f *Fence) allows(p peer.ID) bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return !f.out[p]
}

func (f *Fence) InterceptPeerDial(p peer.ID) bool                 { return f.allows(p) }
func (f *Fence) InterceptAddrDial(p peer.ID, _ ma.Multiaddr) bool { return f.allows(p) }
func (f *Fence) InterceptAccept(network.ConnMultiaddrs) bool      { return true }
func (f *Fence) InterceptSecured(_ network.Direction, p peer.ID, _ network.ConnMultiaddrs) bool {
	return f.allows(p)
}
func (f *Fence) InterceptUpgraded(c network.Conn) (bool, control.DisconnectReason) {
	return f.allows(c.RemotePeer()), 0
}
