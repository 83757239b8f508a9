package configs

import (
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
)

// checkPeerAddr accepts a multiaddr that ends in /p2p/<peer ID>.
func checkPeerAddr(s string) error {
	a, err := ma.NewMultiaddr(s)
	if err != nil {
		return fmt.Errorf("%q is not a multiaddr: %w", s, err)
	}
	if _, err := peer.AddrInfoFromP2pAddr(a); err != nil {
		return fmt.Errorf("%q has no /p2p/<peer ID> part: %w", s, err)
	}
	return nil
}

// checkListenAddr accepts any multiaddr.
func checkListenAddr(s string) error {
	if _, err := ma.NewMultiaddr(s); err != nil {
		return fmt.Errorf("%q is not a multiaddr: %w", s, err)
	}
	return nil
}
