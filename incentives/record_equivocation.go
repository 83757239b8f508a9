package incentives

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/lowband/lowband/verify"
)

// DoubleVote is the proof of a record equivocation: one signer's signatures over two
// different record digests for one network, run and round (see VoteMessage). It is a few
// hundred bytes whatever the size of the two records.
type DoubleVote struct {
	Network string `cbor:"1,keyasint"`
	Run     string `cbor:"2,keyasint"`
	Signer  string `cbor:"3,keyasint"` // canonical peer ID: an Ed25519 identity, key inlined
	Round   uint64 `cbor:"4,keyasint"`
	Votes   []Vote `cbor:"5,keyasint"` // two, in strictly increasing order of digest
}

// Vote is one signed record reduced to what its signature covers of the record: the
// digest (RecordDigest) and the signature.
type Vote struct {
	Digest []byte `cbor:"1,keyasint"` // 32 bytes
	Sig    []byte `cbor:"2,keyasint"` // verify.IdentitySigSize bytes
}

// ErrNotDoubleVote: two signed records that do not make a record equivocation (not one
// network, run, signer and round, or one record twice).
var ErrNotDoubleVote = errors.New("incentives: not two votes of one signer for one round")

// NewRecordEquivocation builds evidence that the signer of the signed records a and b
// signed two different records for one round: their network, run, signer and round, and
// each one's digest and signature, in canonical order (by digest). It checks that a and b
// name one network, run, signer and round and different records (ErrNotDoubleVote), not
// the signatures: see Checker.Check. The signatures are kept, not copied.
func NewRecordEquivocation(a, b *SignedRecord) (*Evidence, error) {
	if a == nil || b == nil || a.Network != b.Network || a.Run != b.Run || a.Signer != b.Signer || a.Round != b.Round {
		return nil, ErrNotDoubleVote
	}
	da, db := RecordDigest(a.Record), RecordDigest(b.Record)
	return NewDoubleVote(a.Network, a.Run, a.Signer, a.Round, Vote{Digest: da[:], Sig: a.Sig}, Vote{Digest: db[:], Sig: b.Sig})
}

// NewDoubleVote builds record equivocation evidence from two votes of signer for round
// of network and run, each its record's digest and signature, as vote references carry
// them (VoteRef): no record is needed. Votes of one digest are ErrNotDoubleVote; the
// signatures are Checker.Check's. They are kept, not copied.
func NewDoubleVote(network, run, signer string, round uint64, va, vb Vote) (*Evidence, error) {
	switch bytes.Compare(va.Digest, vb.Digest) {
	case 0:
		return nil, fmt.Errorf("%w: one record twice", ErrNotDoubleVote)
	case 1:
		va, vb = vb, va
	}
	dv := &DoubleVote{Network: network, Run: run, Signer: signer, Round: round, Votes: []Vote{va, vb}}
	return &Evidence{Version: EvidenceVersion, Kind: KindRecordEquivocation, DoubleVote: dv}, nil
}

// checkDoubleVoteShape: record equivocation carries a double vote of well-formed fields,
// two votes with 32-byte digests in strictly increasing order and signatures of the
// identity signature's size, and nothing else.
func (e *Evidence) checkDoubleVoteShape() error {
	v := e.DoubleVote
	switch {
	case e.Version != EvidenceVersion:
		return fmt.Errorf("%w: evidence version %d, this build reads %d", ErrMalformed, e.Version, EvidenceVersion)
	case len(e.Bundle) != 0 || e.Bundle2 != nil || len(e.Headers) != 0 || len(e.Payload) != 0:
		return fmt.Errorf("%w: %s evidence with a bundle, header or payload", ErrMalformed, e.Kind)
	case v == nil:
		return fmt.Errorf("%w: %s evidence without its double vote", ErrMalformed, e.Kind)
	case v.Network == "" || v.Run == "" || len(v.Network) > verify.MaxIDLen || len(v.Run) > verify.MaxIDLen:
		return fmt.Errorf("%w: double vote for network %q run %q (1-%d bytes each)", ErrMalformed, v.Network, v.Run, verify.MaxIDLen)
	case len(v.Votes) != 2:
		return fmt.Errorf("%w: double vote of %d votes, want 2", ErrMalformed, len(v.Votes))
	}
	if err := verify.CheckPeerID(v.Signer); err != nil {
		return fmt.Errorf("%w: double vote signer: %v", ErrMalformed, err)
	}
	for _, vt := range v.Votes {
		if len(vt.Digest) != 32 || len(vt.Sig) != verify.IdentitySigSize {
			return fmt.Errorf("%w: vote of a %d-byte digest and a %d-byte signature", ErrMalformed, len(vt.Digest), len(vt.Sig))
		}
	}
	if bytes.Compare(v.Votes[0].Digest, v.Votes[1].Digest) >= 0 {
		return fmt.Errorf("%w: votes not in canonical order (or of one record)", ErrMalformed)
	}
	return nil
}

// checkRecordEquivocation: the double vote (in shape, so of two different digests) is for
// this network and run, and both signatures are the signer's over its round and their
// digests. One record signed twice is one vote, and is out of shape.
func (c *Checker) checkRecordEquivocation(e *Evidence) (Offence, error) {
	v := e.DoubleVote
	if v.Network != c.Network || v.Run != c.Run {
		return Offence{}, fmt.Errorf("%w: double vote is for %s/%s, not %s/%s", ErrBadEvidence, v.Network, v.Run, c.Network, c.Run)
	}
	for i, vt := range v.Votes {
		if err := verifyVote(v.Network, v.Run, v.Signer, v.Round, [32]byte(vt.Digest), vt.Sig); err != nil {
			return Offence{}, fmt.Errorf("%w: vote %d: %v", ErrBadEvidence, i, err)
		}
	}
	return Offence{Kind: KindRecordEquivocation, Peer: v.Signer, Round: v.Round}, nil
}

// Claim is the offence e claims, read from its signed data without checking any
// signature or attestation (Checker.Check proves it): who is accused, of what, in which
// round. It fails (ErrMalformed) only where the shape is wrong.
func (e *Evidence) Claim() (Offence, error) {
	if err := e.checkShape(); err != nil {
		return Offence{}, err
	}
	if e.Kind == KindRecordEquivocation {
		return Offence{Kind: e.Kind, Peer: e.DoubleVote.Signer, Round: e.DoubleVote.Round}, nil
	}
	h := &e.Headers[0].Header
	off := Offence{Kind: e.Kind, Peer: h.Peer, Round: h.Round, Index: h.Index}
	if e.Kind == KindInvalidAttestation {
		off.Index = 0
	}
	return off, nil
}
