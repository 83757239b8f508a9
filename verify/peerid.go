package verify

import (
	"fmt"
	"strings"

	golru "github.com/hashicorp/golang-lru/v2"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
)

// parsedIDsCap bounds parsedIDs: far more peers than a network's records list.
const parsedIDsCap = 1 << 14

// parsedID is an ID ParsePeerID accepted, and its key.
type parsedID struct {
	id  peer.ID
	pub crypto.PubKey
}

// parsedIDs remembers the IDs ParsePeerID accepted, by their text. Every record lists the
// peer of each contribution, and a node decodes every voter's record of every round (and
// its own committed one for each peer that asks): the same IDs were parsed N² times a
// node and round, each a base58 decode and encode and a point decompression, 7% of the
// CPU of a swarm of 100. The verdict depends on the text alone, so a remembered one is
// the one parsing gives; refusals are not kept. Least recently used out first: a flood
// of fresh valid IDs only costs what parsing costs without it. Safe for concurrent use.
var parsedIDs = func() *golru.Cache[string, parsedID] {
	c, err := golru.New[string, parsedID](parsedIDsCap)
	if err != nil {
		panic(err) // only for a size below 1
	}
	return c
}()

// ParsePeerID decodes a peer ID written in its one canonical text form: the base58btc
// multihash that peer.ID.String prints ("12D3KooW..."). Other forms of the same ID (a CIDv1
// "bafz..." or "k51..." string) are refused, so one peer can never hold two ledger accounts
// or two names in a record. The ID must embed its Ed25519 public key (an identity
// multihash), which every lowband identity does: the key is read from the ID itself, with
// nothing to fetch, and must be a canonical point of large order (under a small-order key
// anyone could sign in the peer's name). Errors are *Error of class malformed.
func ParsePeerID(s string) (peer.ID, crypto.PubKey, error) {
	if p, ok := parsedIDs.Get(s); ok {
		return p.id, p.pub, nil
	}
	id, pub, err := parsePeerID(s)
	if err == nil {
		parsedIDs.Add(strings.Clone(s), parsedID{id: id, pub: pub}) // not a view into a larger buffer
	}
	return id, pub, err
}

// parsePeerID is ParsePeerID without parsedIDs.
func parsePeerID(s string) (peer.ID, crypto.PubKey, error) {
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
