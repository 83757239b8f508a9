package incentives

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/verify"
)

// SignedRecordVersion is the signed record format this package reads and writes.
const SignedRecordVersion = 1

// MaxSignedRecordSize bounds a signed record on the wire: a record of MaxRecordSize and
// the envelope's other fields (network and run of at most verify.MaxIDLen, a peer ID, a
// 64-byte signature) fit it, and it fits a gossip message.
const MaxSignedRecordSize = MaxRecordSize + 1024

// ErrRecordSignature: a signed record whose signature is not its signer's over its
// network, run and record.
var ErrRecordSignature = errors.New("record signature does not verify")

const domainSignedRecord = "lowband/record/v1"

// SignedRecord is a commit record as a node publishes it: the record's canonical bytes
// signed by the libp2p identity key of the node that committed it, for one network and
// run. It is a vote in the agreement on each round's inclusion list.
type SignedRecord struct {
	Version uint8  `cbor:"1,keyasint"`
	Network string `cbor:"2,keyasint"`
	Run     string `cbor:"3,keyasint"`
	Signer  string `cbor:"4,keyasint"` // canonical peer ID: an Ed25519 identity, key inlined
	Record  []byte `cbor:"5,keyasint"` // the record's canonical encoding (Record.Marshal)
	Sig     []byte `cbor:"6,keyasint"` // Ed25519 by the signer's identity key over SignedMessage
}

// SignRecord signs rec (in canonical form) with key for network and run. The signer is
// the peer ID of key, which must be an Ed25519 identity.
func SignRecord(key crypto.PrivKey, network, run string, rec *Record) (*SignedRecord, error) {
	if key == nil || rec == nil {
		return nil, errors.New("incentives: signing a record needs a key and a record")
	}
	id, err := peer.IDFromPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("incentives: identity key: %w", err)
	}
	s := &SignedRecord{Version: SignedRecordVersion, Network: network, Run: run, Signer: id.String(), Record: rec.Marshal()}
	if err := s.checkForm(); err != nil {
		return nil, err
	}
	if s.Sig, err = key.Sign(s.SignedMessage()); err != nil {
		return nil, fmt.Errorf("incentives: signing the record of round %d: %w", rec.Round, err)
	}
	return s, nil
}

// SignedMessage is what the signature covers: a domain tag, then the network, run, signer
// and record bytes, each prefixed with its length (8 bytes, big-endian).
func (s *SignedRecord) SignedMessage() []byte {
	out := make([]byte, 0, len(domainSignedRecord)+len(s.Network)+len(s.Run)+len(s.Signer)+len(s.Record)+32)
	out = append(out, domainSignedRecord...)
	for _, f := range [][]byte{[]byte(s.Network), []byte(s.Run), []byte(s.Signer), s.Record} {
		out = binary.BigEndian.AppendUint64(out, uint64(len(f)))
		out = append(out, f...)
	}
	return out
}

// Marshal returns the canonical encoding of the signed record.
func (s *SignedRecord) Marshal() []byte { return marshal(s) }

// DecodeSignedRecord decodes a signed record and the record inside. It checks form only:
// the size before anything is decoded, canonical CBOR, the version, the network and run
// lengths, the signer's peer ID form and signature size, and that the inner record
// decodes (DecodeRecord). Errors wrap ErrMalformed. The signature is Verify's job.
func DecodeSignedRecord(data []byte) (*SignedRecord, *Record, error) {
	var s SignedRecord
	if err := decodeCanonical(decMode, "signed record", data, MaxSignedRecordSize, &s); err != nil {
		return nil, nil, err
	}
	if err := s.checkForm(); err != nil {
		return nil, nil, err
	}
	if len(s.Sig) != verify.IdentitySigSize {
		return nil, nil, fmt.Errorf("%w: record signature is %d bytes, want %d", ErrMalformed, len(s.Sig), verify.IdentitySigSize)
	}
	rec, err := DecodeRecord(s.Record)
	if err != nil {
		return nil, nil, err
	}
	return &s, rec, nil
}

// checkForm checks everything but the signature.
func (s *SignedRecord) checkForm() error {
	switch {
	case s.Version != SignedRecordVersion:
		return fmt.Errorf("%w: signed record version %d, this build reads %d", ErrMalformed, s.Version, SignedRecordVersion)
	case s.Network == "" || s.Run == "" || len(s.Network) > verify.MaxIDLen || len(s.Run) > verify.MaxIDLen:
		return fmt.Errorf("%w: signed record for network %q run %q (1-%d bytes each)", ErrMalformed, s.Network, s.Run, verify.MaxIDLen)
	case len(s.Record) > MaxRecordSize:
		return fmt.Errorf("%w: record is %d bytes, limit %d", ErrMalformed, len(s.Record), MaxRecordSize)
	}
	if err := verify.CheckPeerID(s.Signer); err != nil {
		return fmt.Errorf("%w: signer: %v", ErrMalformed, err)
	}
	return nil
}

// Verify checks the signature against the key Signer's peer ID embeds (ErrRecordSignature).
// Call it on what DecodeSignedRecord returned.
func (s *SignedRecord) Verify() error {
	_, pub, err := verify.ParsePeerID(s.Signer)
	if err != nil {
		return fmt.Errorf("%w: signer: %v", ErrMalformed, err)
	}
	ok, err := pub.Verify(s.SignedMessage(), s.Sig)
	if err != nil || !ok {
		return fmt.Errorf("%w: signer %s", ErrRecordSignature, s.Signer)
	}
	return nil
}
