package verify

import (
	"fmt"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
)

// ParsePeerID decodes a peer ID written in its one canonical text form: the base58btc
// multihash that peer.ID.String prints ("12D3KooW..."). Other forms of the same ID (a CIDv1
// "bafz..." or "k51..." string) are refused, so one peer can never hold two ledger accounts
// or two names in a record. The ID must embed its Ed25519 public key (an identity
// multihash), which every lowband identity does: the key is read from the ID itself, with
// nothing to fetch, and must be a canonical point of large order (under a small-order key
// anyone could sign in the peer's name). Errors are *Error of class malformed.
func ParsePeerID(s string) (peer.ID, crypto.PubKey, error) {
	if s == "" || len(s) > MaxIDLen {
		return "", nil, errorf(ClassMalformed, nil, "peer ID must be 1-%d bytes", MaxIDLen)
	}
	id, err := peer.Decode(s)
	if err != nil {
		return "", nil, errorf(ClassMalformed, err, "not a peer ID")
	}
	if id.String() != s {
		return "", nil, errorf(ClassMalformed, nil, "peer ID %q is not in canonical form (want %s)", s, id)
	}
	pub, err := id.ExtractPublicKey()
	if err != nil {
		return "", nil, errorf(ClassMalformed, err, "peer ID %s does not embed its public key", s)
	}
	if pub.Type() != crypto.Ed25519 {
		return "", nil, errorf(ClassMalformed, nil, "peer ID %s has a %v key, want Ed25519", s, pub.Type())
	}
	raw, err := pub.Raw()
	if err != nil || !strongKey(raw) {
		return "", nil, errorf(ClassMalformed, err, "peer ID %s has a small-order or non-canonical key", s)
	}
	return id, pub, nil
}

// CheckPeerID is ParsePeerID for callers that need only the verdict.
func CheckPeerID(s string) error {
	_, _, err := ParsePeerID(s)
	if err != nil {
		return fmt.Errorf("peer %q: %w", s, err)
	}
	return nil
}
