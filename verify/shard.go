package verify

import (
	"bytes"
	"crypto/ed25519"

	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multihash"
	voi "github.com/oasisprotocol/curve25519-voi/primitives/ed25519"
)

// ShardVersion is the shard envelope format this package reads and writes.
const ShardVersion = 1

// MaxShardCount bounds ShardHeader.Count (and so Index). A message that compress accepts
// has at most 2^25 elements (compress.DefaultLimits.MaxElements), each at most 8 bytes (raw
// float64), cut into shards of at least 4 KiB (compress.MinShardBytes): about 66,000
// shards at most. 2^17 bounds that with room.
const MaxShardCount = 1 << 17

// Limits of a shard envelope, apart from the payload whose cap the caller passes.
const (
	maxShardOverhead = 2 << 10 // header fields, signature and CBOR framing
	bundleHashSize   = 32
	maxCIDLen        = 64
	domainShard      = "lowband/shard/v1\x00"
)

// ShardHeader is the signed part of a gradient shard. Network and Run are in it, and the
// signature also covers a domain tag, so a signature made for one network, run or use never
// verifies for another.
type ShardHeader struct {
	Network string `cbor:"1,keyasint"`
	Run     string `cbor:"2,keyasint"`
	Round   uint64 `cbor:"3,keyasint"`
	Peer    string `cbor:"4,keyasint"`
	Index   uint32 `cbor:"5,keyasint"`
	Count   uint32 `cbor:"6,keyasint"`
	// BundleHash is Hash() of the signer's attestation bundle (32 bytes).
	BundleHash []byte `cbor:"7,keyasint"`
	// PayloadCID is the CIDv1 (raw codec 0x55, sha2-256) of the payload, in binary form.
	PayloadCID []byte `cbor:"8,keyasint"`
}

// Shard is one signed shard of a compressed pseudo-gradient.
type Shard struct {
	Version uint8       `cbor:"1,keyasint"`
	Header  ShardHeader `cbor:"2,keyasint"`
	Payload []byte      `cbor:"3,keyasint"`
	Sig     []byte      `cbor:"4,keyasint"`
}

// PayloadCID returns the binary CIDv1 (raw, sha2-256) of a payload.
func PayloadCID(payload []byte) []byte {
	mh, err := multihash.Sum(payload, multihash.SHA2_256, -1)
	if err != nil {
		panic("verify: sha2-256 multihash: " + err.Error()) // registered in multihash; cannot fail
	}
	return cid.NewCidV1(cid.Raw, mh).Bytes()
}

// SigningBytes returns what a shard signature covers: a domain tag followed by the
// header's canonical encoding.
func (h *ShardHeader) SigningBytes() ([]byte, error) {
	if err := h.check(); err != nil {
		return nil, err
	}
	enc, err := encMode.Marshal(h)
	if err != nil {
		return nil, errorf(ClassMalformed, err, "encoding shard header")
	}
	return append([]byte(domainShard), enc...), nil
}

func (h *ShardHeader) check() error {
	switch {
	case h.Network == "" || len(h.Network) > MaxIDLen:
		return errorf(ClassMalformed, nil, "shard network must be 1-%d bytes", MaxIDLen)
	case h.Run == "" || len(h.Run) > MaxIDLen:
		return errorf(ClassMalformed, nil, "shard run must be 1-%d bytes", MaxIDLen)
	case h.Peer == "" || len(h.Peer) > MaxIDLen:
		return errorf(ClassMalformed, nil, "shard peer must be 1-%d bytes", MaxIDLen)
	case h.Count == 0 || h.Index >= h.Count || h.Count > MaxShardCount:
		return errorf(ClassMalformed, nil, "shard index %d of %d (at most %d shards)", h.Index, h.Count, MaxShardCount)
	case len(h.BundleHash) != bundleHashSize:
		return errorf(ClassMalformed, nil, "bundle hash is %d bytes, want %d", len(h.BundleHash), bundleHashSize)
	case len(h.PayloadCID) == 0 || len(h.PayloadCID) > maxCIDLen:
		return errorf(ClassMalformed, nil, "payload CID is %d bytes", len(h.PayloadCID))
	}
	if _, _, err := ParsePeerID(h.Peer); err != nil {
		return err
	}
	return nil
}

// SignShard fills h.PayloadCID from payload and signs the header with key.
func SignShard(key ed25519.PrivateKey, h ShardHeader, payload []byte) (*Shard, error) {
	if len(key) != ed25519.PrivateKeySize {
		return nil, errorf(ClassMalformed, nil, "private key is %d bytes", len(key))
	}
	h.PayloadCID = PayloadCID(payload)
	msg, err := h.SigningBytes()
	if err != nil {
		return nil, err
	}
	return &Shard{Version: ShardVersion, Header: h, Payload: payload, Sig: ed25519.Sign(key, msg)}, nil
}

// Marshal returns the shard's canonical encoding, always at ShardVersion.
func (s *Shard) Marshal() ([]byte, error) {
	if err := s.Header.check(); err != nil {
		return nil, err
	}
	c := *s
	c.Version = ShardVersion
	out, err := encMode.Marshal(&c)
	if err != nil {
		return nil, errorf(ClassMalformed, err, "encoding shard")
	}
	return out, nil
}

// UnmarshalShard decodes a shard whose payload is at most maxPayload bytes. The input size
// is checked before decoding; unknown fields and non-canonical encodings are refused. It
// does not check the signature: see CheckShardSignature.
func UnmarshalShard(data []byte, maxPayload int) (*Shard, error) {
	if maxPayload < 0 || len(data) > maxPayload+maxShardOverhead {
		return nil, errorf(ClassMalformed, nil, "shard is %d bytes, limit %d", len(data), maxPayload+maxShardOverhead)
	}
	var s Shard
	if err := decMode.Unmarshal(data, &s); err != nil {
		return nil, errorf(ClassMalformed, err, "decoding shard")
	}
	switch {
	case s.Version != ShardVersion:
		return nil, errorf(ClassMalformed, nil, "shard version %d, this build reads %d", s.Version, ShardVersion)
	case len(s.Payload) > maxPayload:
		return nil, errorf(ClassMalformed, nil, "payload is %d bytes, limit %d", len(s.Payload), maxPayload)
	case len(s.Sig) != ed25519.SignatureSize:
		return nil, errorf(ClassMalformed, nil, "signature is %d bytes, want %d", len(s.Sig), ed25519.SignatureSize)
	}
	if err := s.Header.check(); err != nil {
		return nil, err
	}
	again, err := encMode.Marshal(&s)
	if err != nil || !bytes.Equal(again, data) {
		return nil, errorf(ClassMalformed, err, "shard is not in canonical encoding")
	}
	return &s, nil
}

// CheckHeaderSignature checks sig over a shard header by attestedKey, without the payload.
// Evidence that carries only headers (two headers signed for the same peer, round and
// index) is checked with it. The signature rule is ZIP-215 (see the package doc): the same
// rule CheckHeaderSignatures applies in batches.
func CheckHeaderSignature(h *ShardHeader, sig []byte, attestedKey ed25519.PublicKey) error {
	msg, err := headerMessage(h, sig, attestedKey)
	if err != nil {
		return err
	}
	return checkSig(attestedKey, msg, sig)
}

// headerMessage checks the sizes of a header, signature and key and returns the signed
// bytes. Single and batch checks both start with it.
func headerMessage(h *ShardHeader, sig []byte, attestedKey ed25519.PublicKey) ([]byte, error) {
	if h == nil {
		return nil, errorf(ClassMalformed, nil, "no shard header")
	}
	if len(attestedKey) != ed25519.PublicKeySize {
		return nil, errorf(ClassMalformed, nil, "attested key is %d bytes", len(attestedKey))
	}
	if len(sig) != ed25519.SignatureSize {
		return nil, errorf(ClassMalformed, nil, "signature is %d bytes", len(sig))
	}
	return h.SigningBytes()
}

// zip215 is the one verification rule of shard signatures, for single and batch checks.
var zip215 = &voi.Options{Verify: voi.VerifyOptionsZIP_215}

// checkSig is the single check of one shard signature under ZIP-215. The key and signature
// sizes are already checked (headerMessage).
func checkSig(key ed25519.PublicKey, msg, sig []byte) error {
	if !voi.VerifyWithOptions(voi.PublicKey(key), msg, sig, zip215) {
		return errorf(ClassBadSignature, nil, "shard signature does not verify with the attested key")
	}
	return nil
}

// CheckShardSignature checks that the shard's header is signed by attestedKey (the
// ephemeral key of the bundle its header names) and that the payload matches the signed
// content ID. A payload mismatch is class bad_signature wrapping ErrPayloadMismatch.
func CheckShardSignature(s *Shard, attestedKey ed25519.PublicKey) error {
	if s == nil {
		return errorf(ClassMalformed, nil, "no shard")
	}
	if err := CheckHeaderSignature(&s.Header, s.Sig, attestedKey); err != nil {
		return err
	}
	return checkPayload(s)
}

// checkPayload checks that the payload is the one whose content ID the header signs.
func checkPayload(s *Shard) error {
	if !bytes.Equal(PayloadCID(s.Payload), s.Header.PayloadCID) {
		return &Error{Class: ClassBadSignature, Detail: "shard payload", Err: ErrPayloadMismatch}
	}
	return nil
}
