package p2ptest

import (
	"fmt"
	"sync"

	mocknet "github.com/libp2p/go-libp2p/p2p/net/mock"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/lowband/lowband/p2p"
)

// MemNet is an in-memory network (go-libp2p's mocknet) on which every host is linked to
// every other. Safe for concurrent use.
type MemNet struct {
	mu sync.Mutex
	mn mocknet.Mocknet
	n  int // hosts added so far
}

// NewMemNet makes an empty in-memory network.
func NewMemNet() *MemNet { return &MemNet{mn: mocknet.New()} }

// Attach adds a host with c.Identity to the network, linked to every host there, and
// sets c.Libp2p to it, for p2p.New. If p2p.New fails, the caller closes c.Libp2p.
func (m *MemNet) Attach(c *p2p.Config) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.n
	addr, err := ma.NewMultiaddr(fmt.Sprintf("/ip4/10.%d.%d.%d/tcp/4001", n>>16&255, n>>8&255, n&255))
	if err != nil {
		return err
	}
	lh, err := m.mn.AddPeer(c.Identity, addr)
	if err != nil {
		return fmt.Errorf("adding an in-memory host: %w", err)
	}
	m.n++
	for _, other := range m.mn.Peers() {
		if other != lh.ID() {
			if _, err := m.mn.LinkPeers(lh.ID(), other); err != nil {
				_ = lh.Close()
				return fmt.Errorf("linking in-memory hosts: %w", err)
			}
		}
	}
	c.Libp2p = lh
	return nil
}

// Close closes the network and every host on it.
func (m *MemNet) Close() error { return m.mn.Close() }
