package incentives

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/lowband/lowband/verify"
)

// EvidenceVersion is the evidence format this package reads and writes. Version 2 orders
// equivocation headers by the headers alone and may carry a second bundle.
const EvidenceVersion = 2

// Kind is the kind of offence a piece of evidence proves.
type Kind uint8

// The evidence kinds. Each is checkable by anyone from signed data alone.
const (
	// KindEquivocation: two different shard headers for the same peer, round and index,
	// each signed by a key the peer attested (one bundle's, or one each of two bundles).
	KindEquivocation Kind = 1
	// KindInvalidAttestation: a shard header signed by the ephemeral key of a bundle that
	// fails the network's policy in a provable way (see ProvableClasses).
	KindInvalidAttestation Kind = 2
	// KindInvalidContent: a signed shard, attested by a valid bundle, whose payload fails
	// the deterministic content checks.
	KindInvalidContent Kind = 3
	// KindRecordEquivocation: two different commit records of one signer for one round,
	// each signed by the signer's identity (a vote cast twice). It takes the penalty of
	// KindEquivocation.
	KindRecordEquivocation Kind = 4
	numKinds                    = 5
	// numPenalties is the length of Params.Penalties: the kinds with a penalty of their own.
	numPenalties = 4
)

var kindNames = [numKinds]string{"", "equivocation", "invalid_attestation", "invalid_content", "record_equivocation"}

func (k Kind) String() string {
	if k == 0 || int(k) >= numKinds {
		return fmt.Sprintf("kind(%d)", uint8(k))
	}
	return kindNames[k]
}

// ParseKind is the inverse of Kind.String.
func ParseKind(s string) (Kind, error) {
	for k := Kind(1); k < numKinds; k++ {
		if kindNames[k] == s {
			return k, nil
		}
	}
	return 0, fmt.Errorf("unknown evidence kind %q", s)
}

// SignedHeader is a shard header and its signature by the bundle's ephemeral key.
type SignedHeader struct {
	Header verify.ShardHeader `cbor:"1,keyasint"`
	Sig    []byte             `cbor:"2,keyasint"`
}

// Evidence proves one offence. It has one canonical encoding (core deterministic CBOR,
// versioned) and its ID is the hash of that encoding.
//
//   - Equivocation: two Headers, different, sorted by the encoding of the header alone (not
//     the signature). Bundle attests the key that signed Headers[0]; Bundle2, when present
//     (and different from Bundle), attests the key that signed Headers[1], else Bundle
//     does. The headers' own bundle hashes are not looked at: any attested key of the peer
//     speaks for it. Payload empty.
//   - InvalidAttestation: Bundle and one Header; Payload empty.
//   - InvalidContent: Bundle, one Header and the shard's Payload.
//   - RecordEquivocation: a DoubleVote (one signer's signatures over two record digests
//     for one round, sorted by digest); no bundle, header or payload (see
//     record_equivocation.go).
type Evidence struct {
	Version uint8          `cbor:"1,keyasint"`
	Kind    Kind           `cbor:"2,keyasint"`
	Bundle  []byte         `cbor:"3,keyasint"` // the canonical encoding of a verify.Bundle
	Headers []SignedHeader `cbor:"4,keyasint"`
	Payload []byte         `cbor:"5,keyasint"`
	Bundle2 []byte         `cbor:"6,keyasint,omitempty"` // equivocation only; see above
	// Key 7 held whole signed records in record equivocation evidence (signed record
	// version 1); it is no longer read.
	DoubleVote *DoubleVote `cbor:"8,keyasint,omitempty"` // record equivocation only
}

// ID names evidence: SHA-256 over a domain tag and the canonical encoding.
type ID [32]byte

func (id ID) String() string { return hex.EncodeToString(id[:]) }

const domainEvidence = "lowband/evidence/v1\x00"

// NewEquivocation builds equivocation evidence from two headers signed by the key of one
// bundle, putting them in canonical order.
func NewEquivocation(bundle []byte, a, b SignedHeader) *Evidence {
	return NewEquivocationOf(bundle, a, bundle, b)
}

// NewEquivocationOf builds equivocation evidence from header a, signed by the key of
// bundleA, and header b, signed by the key of bundleB (both bundles of the same peer),
// in canonical order.
func NewEquivocationOf(bundleA []byte, a SignedHeader, bundleB []byte, b SignedHeader) *Evidence {
	e := &Evidence{Version: EvidenceVersion, Kind: KindEquivocation, Bundle: bundleA, Headers: []SignedHeader{a, b}}
	if !bytes.Equal(bundleA, bundleB) {
		e.Bundle2 = bundleB
	}
	e.sortHeaders()
	return e
}

// NewInvalidAttestation builds evidence that a shard was signed under a failing bundle.
func NewInvalidAttestation(bundle []byte, h SignedHeader) *Evidence {
	return &Evidence{Version: EvidenceVersion, Kind: KindInvalidAttestation, Bundle: bundle, Headers: []SignedHeader{h}}
}

// NewInvalidContent builds evidence that a signed shard's payload fails the content checks.
func NewInvalidContent(bundle []byte, s *verify.Shard) *Evidence {
	return &Evidence{
		Version: EvidenceVersion, Kind: KindInvalidContent, Bundle: bundle,
		Headers: []SignedHeader{{Header: s.Header, Sig: s.Sig}}, Payload: s.Payload,
	}
}

// sortHeaders puts equivocation headers in canonical order (by the header's encoding),
// swapping the bundles with them. It reorders e.Headers in place.
func (e *Evidence) sortHeaders() {
	if len(e.Headers) != 2 || bytes.Compare(marshal(&e.Headers[0].Header), marshal(&e.Headers[1].Header)) <= 0 {
		return
	}
	e.Headers[0], e.Headers[1] = e.Headers[1], e.Headers[0]
	if e.Bundle2 != nil {
		e.Bundle, e.Bundle2 = e.Bundle2, e.Bundle
	}
}

// Marshal returns the canonical encoding.
func (e *Evidence) Marshal() []byte { return marshal(e) }

// ID is the hash of the canonical encoding.
func (e *Evidence) ID() ID {
	return sha256.Sum256(append([]byte(domainEvidence), e.Marshal()...))
}

// DecodeEvidence decodes evidence from a peer. The size is checked first; unknown fields,
// non-canonical encodings and shapes that do not fit the kind are refused (ErrMalformed).
// It does not check signatures or attestation: see Checker.Check.
func DecodeEvidence(data []byte) (*Evidence, error) {
	var e Evidence
	if err := decodeCanonical(decMode, "evidence", data, MaxEvidenceSize, &e); err != nil {
		return nil, err
	}
	if err := e.checkShape(); err != nil {
		return nil, err
	}
	return &e, nil
}

// checkShape checks what can be checked without cryptography.
func (e *Evidence) checkShape() error {
	want := 1
	switch e.Kind {
	case KindEquivocation:
		want = 2
	case KindInvalidAttestation, KindInvalidContent:
	case KindRecordEquivocation:
		return e.checkDoubleVoteShape()
	default:
		return fmt.Errorf("%w: unknown evidence kind %d", ErrMalformed, e.Kind)
	}
	switch {
	case e.Version != EvidenceVersion:
		return fmt.Errorf("%w: evidence version %d, this build reads %d", ErrMalformed, e.Version, EvidenceVersion)
	case e.DoubleVote != nil:
		return fmt.Errorf("%w: %s evidence with a double vote", ErrMalformed, e.Kind)
	case len(e.Headers) != want:
		return fmt.Errorf("%w: %s evidence has %d headers, want %d", ErrMalformed, e.Kind, len(e.Headers), want)
	case len(e.Bundle) == 0 || len(e.Bundle) > verify.MaxBundleSize:
		return fmt.Errorf("%w: bundle is %d bytes", ErrMalformed, len(e.Bundle))
	case (e.Kind == KindInvalidContent) != (len(e.Payload) > 0):
		return fmt.Errorf("%w: %s evidence with a payload of %d bytes", ErrMalformed, e.Kind, len(e.Payload))
	case e.Bundle2 != nil && (e.Kind != KindEquivocation || len(e.Bundle2) > verify.MaxBundleSize || bytes.Equal(e.Bundle, e.Bundle2)):
		return fmt.Errorf("%w: second bundle of %d bytes in %s evidence (only equivocation, only a different one)", ErrMalformed, len(e.Bundle2), e.Kind)
	}
	if want == 2 {
		// The headers themselves must differ: one header signed twice is one statement.
		a, b := marshal(&e.Headers[0].Header), marshal(&e.Headers[1].Header)
		if bytes.Compare(a, b) >= 0 {
			return fmt.Errorf("%w: equivocation headers not in canonical order (or identical)", ErrMalformed)
		}
	}
	return nil
}

// Offence is what a piece of evidence proves: who did what, when. Two pieces of evidence
// with the same offence count once.
//
// The key is (Kind, Peer, Round, Index). Index is the shard index for equivocation and
// invalid content; for invalid attestation it is always 0, because the offence is the bad
// bundle used in that round, not each shard signed under it. Different kinds about the
// same shard are different offences.
type Offence struct {
	Kind  Kind   `cbor:"1,keyasint"`
	Peer  string `cbor:"2,keyasint"`
	Round uint64 `cbor:"3,keyasint"`
	Index uint32 `cbor:"4,keyasint"`
}

func (o Offence) String() string {
	return fmt.Sprintf("%s by %s in round %d index %d", o.Kind, o.Peer, o.Round, o.Index)
}

// compare orders offences by kind, peer, round, index.
func (o Offence) compare(p Offence) int {
	if o.Kind != p.Kind {
		return int(o.Kind) - int(p.Kind)
	}
	if c := strings.Compare(o.Peer, p.Peer); c != 0 {
		return c
	}
	if o.Round != p.Round {
		if o.Round < p.Round {
			return -1
		}
		return 1
	}
	return int(int64(o.Index) - int64(p.Index))
}
