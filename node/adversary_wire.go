package node

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/fxamacker/cbor/v2"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/node/attest"
	"github.com/lowband/lowband/node/core"
	"github.com/lowband/lowband/verify"
)

// forgedMeasurement is what a forged sim bundle claims to run.
var forgedMeasurement = bytes.Repeat([]byte{0xff}, verify.MeasurementSize)

// forgedProducer is the producer of forged-attestation's bundles. On a network that lists
// the sim measurements it allows, and whose sim roots include the node's, the node's own
// sim root signs a measurement off the list: a failure every verifier sees alike, so the
// shards signed under it are evidence that slashes it. Elsewhere a root the network does
// not name signs it: refused everywhere, but not provable (anyone could sign with a
// stranger's root), so never slashed.
func forgedProducer(cfg configs.AttestConfig, home string, spec configs.AttestSpec) (attest.Producer, error) {
	if cfg.Producer == configs.KindSim && len(spec.SimMeasurements) > 0 {
		p, err := attest.NewProducer(cfg, home)
		if err != nil {
			return nil, err
		}
		sp := p.(*attest.SimProducer)
		if slices.Contains(spec.SimRoots, hex.EncodeToString(sp.Root())) {
			return sp.Claiming(forgedMeasurement), nil
		}
	}
	_, root, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	return attest.NewSimProducer(root, forgedMeasurement), nil
}

// forgedSigner makes a fresh ephemeral key and a bundle binding it under the forged producer.
func (a *adversary) forgedSigner(ctx context.Context, epoch uint64) (core.Signer, error) {
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return core.Signer{}, fmt.Errorf("ephemeral key: %w", err)
	}
	b, err := attest.Attest(ctx, a.forged, a.network, a.run, a.identity, epoch, pub)
	if err != nil {
		return core.Signer{}, err
	}
	data, err := b.Marshal()
	if err != nil {
		return core.Signer{}, err
	}
	return core.Signer{Key: key, Bundle: data, BundleHash: b.Hash()}, nil
}

// codecMessage and codecPiece mirror the codec's wire form (training/compress, wire.go)
// field for field, so that an adversary can change a payload's values after encoding: the
// encoder refuses to write what it crafts.
type codecMessage struct {
	Version int          `cbor:"1,keyasint"`
	Part    int          `cbor:"2,keyasint"`
	Parts   int          `cbor:"3,keyasint"`
	Block   int          `cbor:"4,keyasint"`
	Pieces  []codecPiece `cbor:"5,keyasint"`
}

type codecPiece struct {
	Name    string `cbor:"1,keyasint"`
	Shape   []int  `cbor:"2,keyasint"`
	Lo      int    `cbor:"3,keyasint"`
	Hi      int    `cbor:"4,keyasint"`
	Rank    int    `cbor:"5,keyasint"`
	Bits    int    `cbor:"6,keyasint"`
	Codes   []byte `cbor:"7,keyasint"`
	Scales  []byte `cbor:"8,keyasint"`
	QCodes  []byte `cbor:"9,keyasint"`
	QScales []byte `cbor:"10,keyasint"`
}

var codecEnc = func() cbor.EncMode {
	o := cbor.CoreDetEncOptions()
	o.NilContainers = cbor.NilContainerAsEmpty
	m, err := o.EncMode()
	if err != nil {
		panic(err) // static options; cannot fail
	}
	return m
}()

// changeFirstScale decodes a payload, changes its first block scale (a little-endian
// bfloat16) with f and encodes it again.
func changeFirstScale(payload []byte, f func(uint16) uint16) ([]byte, error) {
	var m codecMessage
	if err := cbor.Unmarshal(payload, &m); err != nil {
		return nil, fmt.Errorf("decoding own payload: %w", err)
	}
	if len(m.Pieces) == 0 || len(m.Pieces[0].Scales) < 2 {
		return nil, fmt.Errorf("own payload has no block scale")
	}
	s := m.Pieces[0].Scales
	binary.LittleEndian.PutUint16(s, f(binary.LittleEndian.Uint16(s)))
	return codecEnc.Marshal(&m)
}

// nanPayload makes the payload's first block scale a NaN: every value of that block
// reconstructs to NaN.
func nanPayload(payload []byte) ([]byte, error) {
	return changeFirstScale(payload, func(uint16) uint16 { return 0x7fc0 })
}

// variantPayload changes the payload's first block scale by one unit in the last place: a
// different, equally valid contribution for the same slot.
func variantPayload(payload []byte) ([]byte, error) {
	return changeFirstScale(payload, func(h uint16) uint16 {
		if h < 0x7f7f {
			return h + 1
		}
		return h - 1
	})
}
