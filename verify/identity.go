package verify

import (
	"encoding/binary"
	"errors"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
)

// IdentitySigSize is the size of a bundle's identity signature (Ed25519).
const IdentitySigSize = 64

const domainIdentity = "lowband/attest/identity/v1"

// ErrNoIdentitySig is wrapped (class identity_mismatch) when a bundle carries no identity
// signature.
var ErrNoIdentitySig = errors.New("bundle carries no identity signature")

// IdentityMessage is what a bundle's identity signature covers: a domain tag and the
// length-prefixed network, run, epoch (8 bytes, big-endian), peer ID and ephemeral key.
// The peer signs it with its libp2p identity key, so that only the peer itself can bind
// an ephemeral key to its name: a TEE report binds whatever user data its guest chooses.
func (b *Bundle) IdentityMessage() []byte {
	var out bytesWriter
	writeField(&out, []byte(domainIdentity))
	writeField(&out, []byte(b.Network))
	writeField(&out, []byte(b.Run))
	var e [8]byte
	binary.BigEndian.PutUint64(e[:], b.Epoch)
	writeField(&out, e[:])
	writeField(&out, []byte(b.PeerID))
	writeField(&out, b.EphemeralKey)
	return out
}

type bytesWriter []byte

func (w *bytesWriter) Write(p []byte) (int, error) {
	*w = append(*w, p...)
	return len(p), nil
}

// SignIdentity signs the bundle's binding with the peer's libp2p identity key and stores
// the signature. The key must be the one b.PeerID names.
func (b *Bundle) SignIdentity(key crypto.PrivKey) error {
	if key == nil {
		return errorf(ClassMalformed, nil, "no identity key")
	}
	id, err := peer.IDFromPrivateKey(key)
	if err != nil {
		return errorf(ClassMalformed, err, "identity key")
	}
	if id.String() != b.PeerID {
		return errorf(ClassIdentityMismatch, nil, "identity key is %s's, the bundle names %s", id, b.PeerID)
	}
	sig, err := key.Sign(b.IdentityMessage())
	if err != nil {
		return errorf(ClassMalformed, err, "signing the bundle's binding")
	}
	if len(sig) != IdentitySigSize {
		return errorf(ClassMalformed, nil, "identity signature is %d bytes, want %d", len(sig), IdentitySigSize)
	}
	b.IdentitySig = sig
	return nil
}

// checkIdentity checks the identity signature against the key the peer ID embeds.
func (b *Bundle) checkIdentity() error {
	if len(b.IdentitySig) == 0 {
		return &Error{Class: ClassIdentityMismatch, Detail: "peer " + b.PeerID, Err: ErrNoIdentitySig}
	}
	_, pub, err := ParsePeerID(b.PeerID)
	if err != nil {
		return err
	}
	ok, err := pub.Verify(b.IdentityMessage(), b.IdentitySig)
	if err != nil || !ok {
		return errorf(ClassIdentityMismatch, err, "bundle is not signed by the identity of peer %s", b.PeerID)
	}
	return nil
}
