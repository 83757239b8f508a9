package verify

import (
	"bytes"
	"crypto/ed25519"
	"crypto/subtle"
	"encoding/hex"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
)

// Sizes of sim evidence fields.
const (
	MeasurementSize  = 48
	maxSimEvidence   = 512
	domainSimReport  = "lowband/attest/sim-report/v1\x00"
	simReportVersion = 1
)

// SimReport is the body of simulated evidence: what a TEE report would say, signed by a sim
// root key instead of hardware. It protects nothing; it lets testnets run the same code
// paths as real TEEs.
type SimReport struct {
	Version     uint8  `cbor:"1,keyasint"`
	Measurement []byte `cbor:"2,keyasint"` // 48 bytes, chosen by whoever holds the root
	ReportData  []byte `cbor:"3,keyasint"` // 64 bytes: the binding
	Root        []byte `cbor:"4,keyasint"` // the signing root's ed25519 public key
}

// simEvidence is the encoded evidence: the report and the root's signature over the domain
// tag and the report's canonical encoding.
type simEvidence struct {
	Report SimReport `cbor:"1,keyasint"`
	Sig    []byte    `cbor:"2,keyasint"`
}

// SignSimEvidence returns sim evidence for reportData, signed by root.
func SignSimEvidence(root ed25519.PrivateKey, measurement []byte, reportData [64]byte) ([]byte, error) {
	if len(root) != ed25519.PrivateKeySize {
		return nil, errorf(ClassMalformed, nil, "sim root key is %d bytes", len(root))
	}
	if len(measurement) != MeasurementSize {
		return nil, errorf(ClassMalformed, nil, "measurement is %d bytes, want %d", len(measurement), MeasurementSize)
	}
	r := SimReport{
		Version:     simReportVersion,
		Measurement: measurement,
		ReportData:  reportData[:],
		Root:        root.Public().(ed25519.PublicKey),
	}
	msg, err := simSigningBytes(&r)
	if err != nil {
		return nil, err
	}
	out, err := encMode.Marshal(&simEvidence{Report: r, Sig: ed25519.Sign(root, msg)})
	if err != nil {
		return nil, errorf(ClassMalformed, err, "encoding sim evidence")
	}
	return out, nil
}

func simSigningBytes(r *SimReport) ([]byte, error) {
	enc, err := encMode.Marshal(r)
	if err != nil {
		return nil, errorf(ClassMalformed, err, "encoding sim report")
	}
	return append([]byte(domainSimReport), enc...), nil
}

func decodeSim(evidence []byte) (*simEvidence, error) {
	if len(evidence) > maxSimEvidence {
		return nil, errorf(ClassMalformed, nil, "sim evidence is %d bytes, limit %d", len(evidence), maxSimEvidence)
	}
	var e simEvidence
	if err := decMode.Unmarshal(evidence, &e); err != nil {
		return nil, errorf(ClassMalformed, err, "decoding sim evidence")
	}
	if again, err := encMode.Marshal(&e); err != nil || !bytes.Equal(again, evidence) {
		return nil, errorf(ClassMalformed, err, "sim evidence is not in canonical encoding")
	}
	r := &e.Report
	switch {
	case r.Version != simReportVersion:
		return nil, errorf(ClassMalformed, nil, "sim report version %d", r.Version)
	case len(r.Measurement) != MeasurementSize:
		return nil, errorf(ClassMalformed, nil, "sim measurement is %d bytes", len(r.Measurement))
	case len(r.ReportData) != ReportDataSize:
		return nil, errorf(ClassMalformed, nil, "sim report data is %d bytes", len(r.ReportData))
	case len(r.Root) != ed25519.PublicKeySize:
		return nil, errorf(ClassMalformed, nil, "sim root is %d bytes", len(r.Root))
	case len(e.Sig) != ed25519.SignatureSize:
		return nil, errorf(ClassMalformed, nil, "sim signature is %d bytes", len(e.Sig))
	}
	return &e, nil
}

func verifySim(evidence []byte, p *Policy) (*Verdict, error) {
	e, err := decodeSim(evidence)
	if err != nil {
		return nil, err
	}
	trusted := false
	for _, root := range p.SimRoots {
		if subtle.ConstantTimeCompare(root, e.Report.Root) == 1 {
			trusted = true
		}
	}
	if !trusted {
		return nil, errorf(ClassUntrustedRoot, nil, "sim root %s is not one the network names", hex.EncodeToString(e.Report.Root))
	}
	msg, err := simSigningBytes(&e.Report)
	if err != nil {
		return nil, err
	}
	if !ed25519.Verify(e.Report.Root, msg, e.Sig) {
		return nil, errorf(ClassBadSignature, nil, "sim evidence signature does not verify")
	}
	checked := len(p.SimMeasurements) > 0
	if checked && !inAllowList(e.Report.Measurement, p.SimMeasurements) {
		return nil, errorf(ClassMeasurementNotAllowed, nil, "sim measurement %s", hex.EncodeToString(e.Report.Measurement))
	}
	return &Verdict{
		Kind:               KindSim,
		Measurement:        e.Report.Measurement,
		ReportData:         e.Report.ReportData,
		MeasurementChecked: checked,
		Insecure:           true,
		TCB:                "sim",
	}, nil
}

// NewSimBundle makes a bundle with sim evidence for the peer whose libp2p identity key is
// identity, signed by that key: the evidence binds ReportData(network, run, peer ID,
// ephemeral, EpochSeed(network, run, epoch)). For testnets and tests only.
func NewSimBundle(root ed25519.PrivateKey, measurement []byte, network, run string, identity crypto.PrivKey, epoch uint64, ephemeral ed25519.PublicKey) (*Bundle, error) {
	if identity == nil {
		return nil, errorf(ClassMalformed, nil, "no identity key")
	}
	id, err := peer.IDFromPrivateKey(identity)
	if err != nil {
		return nil, errorf(ClassMalformed, err, "identity key")
	}
	peerID := id.String()
	seed := EpochSeed(network, run, epoch)
	ev, err := SignSimEvidence(root, measurement, ReportData(network, run, peerID, ephemeral, seed[:]))
	if err != nil {
		return nil, err
	}
	b := &Bundle{
		Version: BundleVersion, Kind: KindSim, Evidence: ev,
		EphemeralKey: append([]byte(nil), ephemeral...),
		PeerID:       peerID, Network: network, Run: run, Epoch: epoch,
	}
	if err := b.SignIdentity(identity); err != nil {
		return nil, err
	}
	if err := b.check(); err != nil {
		return nil, err
	}
	return b, nil
}
