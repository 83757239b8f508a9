package verify

import (
	"bytes"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/binary"
	"fmt"

	"github.com/fxamacker/cbor/v2"
)

// Kind names a TEE technology.
type Kind string

// The TEE kinds.
const (
	KindSEVSNP Kind = "sev-snp"
	KindTDX    Kind = "tdx"
	KindSim    Kind = "sim"
)

// Kinds lists the kinds this package verifies, in a stable order.
var Kinds = []Kind{KindSEVSNP, KindTDX, KindSim}

// BundleVersion is the bundle format this package reads and writes. Version 2 added the
// identity signature.
const BundleVersion = 2

// Size limits of a bundle, checked before anything is allocated.
const (
	MaxBundleSize    = 64 << 10 // whole encoded bundle
	MaxEndorsements  = 4        // e.g. VCEK, ASK, ARK
	MaxIDLen         = 128      // PeerID, Network, Run
	EphemeralKeySize = 32       // ed25519 public key
	ReportDataSize   = 64       // SHA-512 binding
	domainReportData = "lowband/attest/report-data/v1"
	domainEpochSeed  = "lowband/attest/epoch-seed/v1"
	// maxNesting and maxArray bound every decoder here: no wire object nests deeper than a
	// map in a map, or has more than MaxEndorsements array elements.
	maxNesting = 4
	maxArray   = 16
)

// Bundle is an attestation bundle: a peer's TEE evidence bound to the ephemeral key that
// signs its shards for one epoch. It has one canonical encoding (core deterministic CBOR);
// Hash names it.
type Bundle struct {
	Version uint8 `cbor:"1,keyasint"`
	Kind    Kind  `cbor:"2,keyasint"`
	// Evidence is the raw SEV-SNP report (with its signature), the TDX quote, or the sim
	// evidence (see SimEvidence).
	Evidence []byte `cbor:"3,keyasint"`
	// Endorsements are the DER certificates the verifier needs: for SEV-SNP exactly the
	// VCEK or VLEK (the ASK and ARK are pinned by the verifier, never taken from here); for
	// TDX and sim none. Anything more is refused.
	Endorsements [][]byte `cbor:"4,keyasint"`
	// EphemeralKey is the ed25519 public key (32 bytes) that signs this peer's shards.
	EphemeralKey []byte `cbor:"5,keyasint"`
	PeerID       string `cbor:"6,keyasint"`
	Network      string `cbor:"7,keyasint"`
	Run          string `cbor:"8,keyasint"`
	Epoch        uint64 `cbor:"9,keyasint"`
	// IdentitySig is the signature of IdentityMessage by the libp2p identity key that
	// PeerID embeds (see SignIdentity). Verify refuses a bundle without it.
	IdentitySig []byte `cbor:"10,keyasint,omitempty"`
}

var (
	encMode = func() cbor.EncMode {
		m, err := cbor.CoreDetEncOptions().EncMode()
		if err != nil {
			panic(err) // static options; cannot fail
		}
		return m
	}()
	decMode = func() cbor.DecMode {
		m, err := cbor.DecOptions{
			DupMapKey:         cbor.DupMapKeyEnforcedAPF,
			IndefLength:       cbor.IndefLengthForbidden,
			TagsMd:            cbor.TagsForbidden,
			MaxNestedLevels:   maxNesting,
			MaxArrayElements:  maxArray,
			MaxMapPairs:       64,
			ExtraReturnErrors: cbor.ExtraDecErrorUnknownField,
		}.DecMode()
		if err != nil {
			panic(err) // static options; cannot fail
		}
		return m
	}()
)

// Marshal returns the canonical encoding. It fails when a field is out of range.
func (b *Bundle) Marshal() ([]byte, error) {
	if err := b.check(); err != nil {
		return nil, err
	}
	out, err := encMode.Marshal(b)
	if err != nil {
		return nil, errorf(ClassMalformed, err, "encoding bundle")
	}
	if len(out) > MaxBundleSize {
		return nil, errorf(ClassMalformed, nil, "bundle is %d bytes, limit %d", len(out), MaxBundleSize)
	}
	return out, nil
}

// UnmarshalBundle decodes a bundle. The size is checked before decoding, unknown fields and
// non-canonical encodings are refused, and field sizes are checked. Errors are *Error of
// class malformed.
func UnmarshalBundle(data []byte) (*Bundle, error) {
	if len(data) > MaxBundleSize {
		return nil, errorf(ClassMalformed, nil, "bundle is %d bytes, limit %d", len(data), MaxBundleSize)
	}
	var b Bundle
	if err := decMode.Unmarshal(data, &b); err != nil {
		return nil, errorf(ClassMalformed, err, "decoding bundle")
	}
	if err := b.check(); err != nil {
		return nil, err
	}
	again, err := encMode.Marshal(&b)
	if err != nil || !bytes.Equal(again, data) {
		return nil, errorf(ClassMalformed, err, "bundle is not in canonical encoding")
	}
	return &b, nil
}

// check verifies sizes and ranges; it does not verify evidence.
func (b *Bundle) check() error {
	switch {
	case b.Version != BundleVersion:
		return errorf(ClassMalformed, nil, "bundle version %d, this build reads %d", b.Version, BundleVersion)
	case b.Kind != KindSEVSNP && b.Kind != KindTDX && b.Kind != KindSim:
		return errorf(ClassUnsupportedKind, nil, "unknown kind %q", b.Kind)
	case len(b.Evidence) == 0:
		return errorf(ClassMalformed, nil, "no evidence")
	case len(b.Endorsements) > MaxEndorsements:
		return errorf(ClassMalformed, nil, "%d endorsements, limit %d", len(b.Endorsements), MaxEndorsements)
	case len(b.EphemeralKey) != EphemeralKeySize:
		return errorf(ClassMalformed, nil, "ephemeral key is %d bytes, want %d", len(b.EphemeralKey), EphemeralKeySize)
	case !strongKey(b.EphemeralKey):
		return errorf(ClassMalformed, nil, "ephemeral key is not a canonical Ed25519 point of large order")
	case len(b.IdentitySig) != 0 && len(b.IdentitySig) != IdentitySigSize:
		return errorf(ClassMalformed, nil, "identity signature is %d bytes, want %d", len(b.IdentitySig), IdentitySigSize)
	case b.Network == "" || len(b.Network) > MaxIDLen:
		return errorf(ClassMalformed, nil, "network must be 1-%d bytes", MaxIDLen)
	case b.Run == "" || len(b.Run) > MaxIDLen:
		return errorf(ClassMalformed, nil, "run must be 1-%d bytes", MaxIDLen)
	}
	if _, _, err := ParsePeerID(b.PeerID); err != nil {
		return err
	}
	return nil
}

// Hash is SHA-256 over the canonical encoding. It names the bundle in shard headers and
// in the verification cache. It names these bytes, not the attestation: hardware evidence
// is not unique (an ECDSA signature has two valid forms), so one peer's attestation may
// exist under more than one hash, each binding the same peer and key.
func (b *Bundle) Hash() [32]byte {
	enc, err := encMode.Marshal(b)
	if err != nil {
		// Every field is a plain value type; encoding cannot fail.
		panic(fmt.Sprintf("verify: encoding bundle: %v", err))
	}
	return sha256.Sum256(enc)
}

// ReportData is the binding a TEE report must carry in its 64-byte user-data field:
// SHA-512 over a domain tag and the length-prefixed network, run, peer ID, ephemeral key
// and epoch seed. Length prefixes (8 bytes, big-endian) make the encoding injective.
func ReportData(network, run, peerID string, ephemeralKey []byte, epochSeed []byte) [64]byte {
	h := sha512.New()
	writeField(h, []byte(domainReportData))
	writeField(h, []byte(network))
	writeField(h, []byte(run))
	writeField(h, []byte(peerID))
	writeField(h, ephemeralKey)
	writeField(h, epochSeed)
	var out [64]byte
	h.Sum(out[:0])
	return out
}

// EpochSeed is the seed bound into bundles of one epoch: SHA-256 over a domain tag and the
// length-prefixed network, run and epoch number.
//
// It is deterministic, so every node derives the same seed without talking to anyone, and
// a bundle made for one epoch does not bind another. It is also predictable: a peer can
// produce bundles for future epochs in advance. It therefore proves which epoch a bundle
// was made for, not when it was made; freshness rests on the policy's MaxAgeEpochs window
// and on the ephemeral key living only inside the TEE. An unpredictable seed (for example
// the state root of a committed round) would close that gap at the cost of a dependency on
// consensus; it is not used here.
func EpochSeed(network, run string, epoch uint64) [32]byte {
	h := sha256.New()
	writeField(h, []byte(domainEpochSeed))
	writeField(h, []byte(network))
	writeField(h, []byte(run))
	var e [8]byte
	binary.BigEndian.PutUint64(e[:], epoch)
	writeField(h, e[:])
	var out [32]byte
	h.Sum(out[:0])
	return out
}

type writer interface{ Write([]byte) (int, error) }

func writeField(w writer, b []byte) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(b)))
	w.Write(n[:])
	w.Write(b)
}
