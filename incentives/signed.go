package incentives

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/verify"
)

// SignedRecordVersion is the signed record format this package reads and writes. Version
// 2 signs the round and a digest of the record rather than the record itself, so that the
// proof of a vote cast twice is small whatever the records' size; version 1 is refused.
const SignedRecordVersion = 2

// CommittedRecordVersion marks a record a node signs for what it holds after a repair
// closed the round again: for an audit and for peers that ask what it committed. It is
// not a vote: its signature covers another domain (CommittedMessage), so that it and the
// node's vote for the round never make a proof of a vote cast twice, and the records topic
// refuses it.
const CommittedRecordVersion = 3

// MaxSignedRecordSize bounds a signed record on the wire: a record of MaxRecordSize and
// the envelope's other fields (network and run of at most verify.MaxIDLen, a peer ID, a
// 64-byte signature) fit it, and it fits a gossip message.
const MaxSignedRecordSize = MaxRecordSize + 1024

// ErrRecordSignature: a signed record whose signature is not its signer's over its
// network, run, round and record digest.
var ErrRecordSignature = errors.New("record signature does not verify")

const (
	domainSignedRecord    = "lowband/record/v2"
	domainCommittedRecord = "lowband/committed-record/v2"
)

// SignedRecord is a commit record as a node publishes it: the record's canonical bytes
// and their round, signed by the libp2p identity key of the node that committed it, for
// one network and run. It is a vote in the agreement on each round's inclusion list. The
// signature covers the record's digest (RecordDigest), not its bytes: see VoteMessage.
type SignedRecord struct {
	Version uint8  `cbor:"1,keyasint"`
	Network string `cbor:"2,keyasint"`
	Run     string `cbor:"3,keyasint"`
	Signer  string `cbor:"4,keyasint"` // canonical peer ID: an Ed25519 identity, key inlined
	Record  []byte `cbor:"5,keyasint"` // the record's canonical encoding (Record.Marshal)
	Sig     []byte `cbor:"6,keyasint"` // Ed25519 by the signer's identity key over SignedMessage
	Round   uint64 `cbor:"7,keyasint"` // the record's round, which the decoder checks
}

// SignRecord signs rec (in canonical form) with key for network and run. The signer is
// the peer ID of key, which must be an Ed25519 identity.
func SignRecord(key crypto.PrivKey, network, run string, rec *Record) (*SignedRecord, error) {
	return signRecord(key, network, run, rec, SignedRecordVersion)
}

// SignCommitted signs rec as SignRecord does, as a committed record that is not a vote
// (CommittedRecordVersion).
func SignCommitted(key crypto.PrivKey, network, run string, rec *Record) (*SignedRecord, error) {
	return signRecord(key, network, run, rec, CommittedRecordVersion)
}

func signRecord(key crypto.PrivKey, network, run string, rec *Record, version uint8) (*SignedRecord, error) {
	if key == nil || rec == nil {
		return nil, errors.New("incentives: signing a record needs a key and a record")
	}
	id, err := peer.IDFromPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("incentives: identity key: %w", err)
	}
	s := &SignedRecord{Version: version, Network: network, Run: run, Signer: id.String(), Record: rec.Marshal(), Round: rec.Round}
	if err := s.checkForm(); err != nil {
		return nil, err
	}
	if s.Sig, err = key.Sign(s.SignedMessage()); err != nil {
		return nil, fmt.Errorf("incentives: signing the record of round %d: %w", rec.Round, err)
	}
	return s, nil
}

// RecordDigest is what a record signature covers of the record: SHA-256 of its bytes.
func RecordDigest(record []byte) [32]byte { return sha256.Sum256(record) }

// VoteMessage is what a record signature covers: a domain tag, then the network, run,
// signer, round (8 bytes, big-endian) and record digest, each prefixed with its length
// (8 bytes, big-endian). Its size does not depend on the record's.
func VoteMessage(network, run, signer string, round uint64, digest [32]byte) []byte {
	return recordMessage(domainSignedRecord, network, run, signer, round, digest)
}

// CommittedMessage is what a committed record's signature covers: VoteMessage's fields
// under another domain tag.
func CommittedMessage(network, run, signer string, round uint64, digest [32]byte) []byte {
	return recordMessage(domainCommittedRecord, network, run, signer, round, digest)
}

func recordMessage(domain, network, run, signer string, round uint64, digest [32]byte) []byte {
	out := make([]byte, 0, len(domain)+len(network)+len(run)+len(signer)+len(digest)+48)
	out = append(out, domain...)
	r := binary.BigEndian.AppendUint64(nil, round)
	for _, f := range [][]byte{[]byte(network), []byte(run), []byte(signer), r, digest[:]} {
		out = binary.BigEndian.AppendUint64(out, uint64(len(f)))
		out = append(out, f...)
	}
	return out
}

// SignedMessage is what the signature covers: VoteMessage of the network, run, signer,
// round and the digest of the record bytes, recomputed from them.
func (s *SignedRecord) SignedMessage() []byte {
	if s.Version == CommittedRecordVersion {
		return CommittedMessage(s.Network, s.Run, s.Signer, s.Round, RecordDigest(s.Record))
	}
	return VoteMessage(s.Network, s.Run, s.Signer, s.Round, RecordDigest(s.Record))
}

// IsVote reports whether the record is a vote (SignRecord), not a committed record
// (SignCommitted).
func (s *SignedRecord) IsVote() bool { return s.Version == SignedRecordVersion }

// Marshal returns the canonical encoding of the signed record.
func (s *SignedRecord) Marshal() []byte { return marshal(s) }

// DecodeSignedRecord decodes a signed record and the record inside. It checks form only:
// the size before anything is decoded, canonical CBOR, the version, the network and run
// lengths, the signer's peer ID form and signature size, that the inner record decodes
// (DecodeRecord) and that its round is the round signed. Errors wrap ErrMalformed. The
// signature is Verify's job.
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
	if rec.Round != s.Round {
		return nil, nil, fmt.Errorf("%w: signed record of round %d holds a record of round %d", ErrMalformed, s.Round, rec.Round)
	}
	return &s, rec, nil
}

// checkForm checks everything but the signature.
func (s *SignedRecord) checkForm() error {
	switch {
	case s.Version == 1:
		return fmt.Errorf("%w: signed record version 1 (signed over the whole record) is no longer read; this build reads %d and %d", ErrMalformed, SignedRecordVersion, CommittedRecordVersion)
	case s.Version != SignedRecordVersion && s.Version != CommittedRecordVersion:
		return fmt.Errorf("%w: signed record version %d, this build reads %d and %d", ErrMalformed, s.Version, SignedRecordVersion, CommittedRecordVersion)
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

// Verify checks the signature against the key Signer's peer ID embeds (ErrRecordSignature),
// over the digest it recomputes from the record bytes. Call it on what DecodeSignedRecord
// returned (which checked that the round signed is the record's).
func (s *SignedRecord) Verify() error {
	if s.Version == CommittedRecordVersion {
		return verifySigned(CommittedMessage(s.Network, s.Run, s.Signer, s.Round, RecordDigest(s.Record)), s.Signer, s.Round, s.Sig)
	}
	return verifyVote(s.Network, s.Run, s.Signer, s.Round, RecordDigest(s.Record), s.Sig)
}

// VerifyRecordDigest checks sig, by the key signer's peer ID embeds, over the message a
// signed record of the given version signs (VoteMessage for SignedRecordVersion,
// CommittedMessage for CommittedRecordVersion) with a record digest: a signed record's
// signature checked without the record (ErrRecordSignature; ErrMalformed for another
// version or a signer that is no valid peer ID). Nodes comparing their heads exchange only
// the digests of the records they committed: the vote they signed, or the record they
// signed when they repaired the round.
func VerifyRecordDigest(version byte, network, run, signer string, round uint64, digest [32]byte, sig []byte) error {
	switch version {
	case SignedRecordVersion:
		return verifyVote(network, run, signer, round, digest, sig)
	case CommittedRecordVersion:
		return verifySigned(CommittedMessage(network, run, signer, round, digest), signer, round, sig)
	}
	return fmt.Errorf("%w: signed record version %d, this build reads %d and %d", ErrMalformed, version, SignedRecordVersion, CommittedRecordVersion)
}

// verifyVote checks sig, by the key signer's peer ID embeds, over VoteMessage
// (ErrRecordSignature).
func verifyVote(network, run, signer string, round uint64, digest [32]byte, sig []byte) error {
	return verifySigned(VoteMessage(network, run, signer, round, digest), signer, round, sig)
}

// verifySigned checks sig, by the key signer's peer ID embeds, over msg.
func verifySigned(msg []byte, signer string, round uint64, sig []byte) error {
	_, pub, err := verify.ParsePeerID(signer)
	if err != nil {
		return fmt.Errorf("%w: signer: %v", ErrMalformed, err)
	}
	ok, err := pub.Verify(msg, sig)
	if err != nil || !ok {
		return fmt.Errorf("%w: signer %s, round %d", ErrRecordSignature, signer, round)
	}
	return nil
}
