package incentives

import (
	"bytes"
	"fmt"

	"github.com/lowband/lowband/verify"
)

// VoteRefVersion marks a vote that names its record by digest instead of carrying it
// (VoteRef).
const VoteRefVersion = 4

// MaxVoteRefSize bounds a vote reference on the wire: the network and run of at most
// verify.MaxIDLen each, a peer ID, a digest, a signature and CBOR's framing fit it.
const MaxVoteRefSize = 1024

// VoteRef is a vote as the records topic carries it: a signed record without its record,
// which it names by digest (RecordDigest). Its signature is the vote's (SignRecord's, over
// VoteMessage), so it is checked without the record, two references of a signer for one
// round with different digests are a vote cast twice (NewRecordEquivocation of the signed
// records), and With turns it back into the signed record once the record's bytes are
// found: every node of a round that closed alike holds them already, as its own record,
// so a vote costs its peers a few hundred bytes whatever the number of contributions it
// lists.
type VoteRef struct {
	Version uint8  `cbor:"1,keyasint"`
	Network string `cbor:"2,keyasint"`
	Run     string `cbor:"3,keyasint"`
	Signer  string `cbor:"4,keyasint"` // canonical peer ID: an Ed25519 identity, key inlined
	Digest  []byte `cbor:"5,keyasint"` // RecordDigest of the record voted for
	Sig     []byte `cbor:"6,keyasint"` // the vote's signature (VoteMessage)
	Round   uint64 `cbor:"7,keyasint"`
}

// Ref returns the reference form of a vote (SignRecord's); nil for a committed record,
// which is no vote.
func (s *SignedRecord) Ref() *VoteRef {
	if !s.IsVote() {
		return nil
	}
	d := RecordDigest(s.Record)
	return &VoteRef{Version: VoteRefVersion, Network: s.Network, Run: s.Run, Signer: s.Signer,
		Digest: d[:], Sig: bytes.Clone(s.Sig), Round: s.Round}
}

// Key is the digest the reference names (zero past its first 32 bytes, or short of them,
// for a reference DecodeVoteRef would refuse).
func (v *VoteRef) Key() (out [32]byte) {
	copy(out[:], v.Digest)
	return out
}

// Vote is the reference reduced to what its signature covers: the digest and the
// signature, as a double vote carries them (NewDoubleVote).
func (v *VoteRef) Vote() Vote { return Vote{Digest: v.Digest, Sig: v.Sig} }

// Marshal returns the canonical encoding of the reference.
func (v *VoteRef) Marshal() []byte { return marshal(v) }

// DecodeVoteRef decodes a vote reference, checking form only: the size before anything is
// decoded, canonical CBOR, the version, the network and run lengths, the signer's peer ID
// form, the digest's and the signature's sizes. Errors wrap ErrMalformed. The signature is
// Verify's job.
func DecodeVoteRef(data []byte) (*VoteRef, error) {
	var v VoteRef
	if err := decodeCanonical(decMode, "vote reference", data, MaxVoteRefSize, &v); err != nil {
		return nil, err
	}
	switch {
	case v.Version != VoteRefVersion:
		return nil, fmt.Errorf("%w: vote reference version %d, this build reads %d", ErrMalformed, v.Version, VoteRefVersion)
	case v.Network == "" || v.Run == "" || len(v.Network) > verify.MaxIDLen || len(v.Run) > verify.MaxIDLen:
		return nil, fmt.Errorf("%w: vote reference for network %q run %q (1-%d bytes each)", ErrMalformed, v.Network, v.Run, verify.MaxIDLen)
	case len(v.Digest) != 32:
		return nil, fmt.Errorf("%w: vote reference digest is %d bytes", ErrMalformed, len(v.Digest))
	case len(v.Sig) != verify.IdentitySigSize:
		return nil, fmt.Errorf("%w: vote reference signature is %d bytes, want %d", ErrMalformed, len(v.Sig), verify.IdentitySigSize)
	}
	if err := verify.CheckPeerID(v.Signer); err != nil {
		return nil, fmt.Errorf("%w: signer: %v", ErrMalformed, err)
	}
	return &v, nil
}

// Verify checks the signature against the key Signer's peer ID embeds
// (ErrRecordSignature): the signer voted for the record of that digest in that round.
func (v *VoteRef) Verify() error {
	return verifyVote(v.Network, v.Run, v.Signer, v.Round, v.Key(), v.Sig)
}

// With returns the signed record the reference stands for, given its record's bytes: they
// must have the digest named (ErrMalformed otherwise, as for a record that does not
// decode or is of another round). The signature is not checked again: Verify checks the
// same message.
func (v *VoteRef) With(record []byte) (*SignedRecord, *Record, error) {
	if RecordDigest(record) != v.Key() {
		return nil, nil, fmt.Errorf("%w: record of digest %x, the vote names %x", ErrMalformed, RecordDigest(record), v.Digest)
	}
	rec, err := DecodeRecord(record)
	if err != nil {
		return nil, nil, err
	}
	if rec.Round != v.Round {
		return nil, nil, fmt.Errorf("%w: vote of round %d names a record of round %d", ErrMalformed, v.Round, rec.Round)
	}
	s := &SignedRecord{Version: SignedRecordVersion, Network: v.Network, Run: v.Run, Signer: v.Signer,
		Record: bytes.Clone(record), Sig: bytes.Clone(v.Sig), Round: v.Round}
	return s, rec, nil
}
