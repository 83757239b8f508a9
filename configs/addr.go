package configs

import (
	"fmt"

	"github.com/libp2p/go-libp2p/core/crypto"
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

// checkPeerID accepts a peer ID only in its one canonical text form (what peer.ID.String
// prints: base58btc, "12D3KooW...") and only with an Ed25519 public key embedded, as every
// lowband identity has. Verify's ParsePeerID applies the same rule to peer input.
func checkPeerID(s string) error {
	id, err := peer.Decode(s)
	if err != nil {
		return fmt.Errorf("not a peer ID: %w", err)
	}
	if id.String() != s {
		return fmt.Errorf("peer ID not in canonical form (write it as %s)", id)
	}
	pub, err := id.ExtractPublicKey()
	if err != nil {
		return fmt.Errorf("peer ID does not embed its public key: %w", err)
	}
	if pub.Type() != crypto.Ed25519 {
		return fmt.Errorf("peer ID has a %v key, want Ed25519", pub.Type())
	}
	return nil
}
