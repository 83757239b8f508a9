package attest

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/verify"
)

// Producer makes this node's TEE evidence.
type Producer interface {
	// Kind is the kind of evidence produced.
	Kind() verify.Kind
	// Evidence returns evidence whose user data is reportData, and the endorsements a
	// verifier needs (for SEV-SNP the VCEK or VLEK certificate). It may block on the kernel;
	// it is not safe for concurrent use.
	Evidence(ctx context.Context, reportData [64]byte) (evidence []byte, endorsements [][]byte, err error)
}

// ErrProducerNotAllowed is wrapped when the network does not accept a producer's kind.
var ErrProducerNotAllowed = errors.New("the network does not accept this producer")

// CheckProducerAllowed fails when the network spec does not accept evidence of the
// producer's kind, so that a node refuses to start rather than produce bundles nobody takes.
func CheckProducerAllowed(producer string, spec configs.AttestSpec) error {
	switch producer {
	case configs.KindSim:
		if !spec.AllowsSim() {
			return fmt.Errorf("producer %q: %w: the network spec does not allow simulated evidence", producer, ErrProducerNotAllowed)
		}
	case configs.KindSEVSNP, configs.KindTDX:
		for _, k := range spec.Kinds {
			if k == producer {
				return nil
			}
		}
		return fmt.Errorf("producer %q: %w: it accepts %v", producer, ErrProducerNotAllowed, spec.Kinds)
	default:
		return fmt.Errorf("unknown producer %q (want one of %v)", producer, configs.AttestKinds)
	}
	return nil
}

// NewProducer returns the producer the config selects. home resolves a relative sim key
// path. Hardware producers check that the kernel offers the interface.
func NewProducer(cfg configs.AttestConfig, home string) (Producer, error) {
	switch cfg.Producer {
	case configs.KindSim:
		return newSimFromConfig(cfg, home)
	case configs.KindSEVSNP:
		return newSNPProducer()
	case configs.KindTDX:
		return newTDXProducer()
	}
	return nil, fmt.Errorf("unknown producer %q (want one of %v)", cfg.Producer, configs.AttestKinds)
}

func newSimFromConfig(cfg configs.AttestConfig, home string) (Producer, error) {
	measurement := make([]byte, verify.MeasurementSize)
	if cfg.SimMeasurement != "" {
		m, err := hex.DecodeString(cfg.SimMeasurement)
		if err != nil || len(m) != verify.MeasurementSize {
			return nil, fmt.Errorf("attest.sim_measurement: want %d bytes of hex", verify.MeasurementSize)
		}
		measurement = m
	}
	if cfg.SimKeyFile == "" {
		return NewSimProducer(DevnetSimRoot(), measurement), nil
	}
	path := cfg.SimKeyFile
	if !filepath.IsAbs(path) {
		path = filepath.Join(home, path)
	}
	key, err := ReadSimKey(path)
	if err != nil {
		return nil, err
	}
	return NewSimProducer(key, measurement), nil
}

// DevnetSimRoot is the public devnet sim root (see configs.DevnetSimRootSeed): anyone can
// sign with it.
func DevnetSimRoot() ed25519.PrivateKey {
	seed := configs.DevnetSimRootSeed()
	return ed25519.NewKeyFromSeed(seed[:])
}

// SimProducer signs sim evidence with a sim root key. It protects nothing.
type SimProducer struct {
	root        ed25519.PrivateKey
	measurement []byte
}

// NewSimProducer returns a producer signing with root and claiming measurement (48 bytes).
func NewSimProducer(root ed25519.PrivateKey, measurement []byte) *SimProducer {
	return &SimProducer{root: root, measurement: measurement}
}

// Kind implements Producer.
func (s *SimProducer) Kind() verify.Kind { return verify.KindSim }

// Root returns the sim root's public key.
func (s *SimProducer) Root() ed25519.PublicKey { return s.root.Public().(ed25519.PublicKey) }

// Claiming returns a producer signing with the same root that claims another measurement
// (48 bytes): adversary modes forge bundles with it.
func (s *SimProducer) Claiming(measurement []byte) *SimProducer {
	return &SimProducer{root: s.root, measurement: measurement}
}

// Evidence implements Producer.
func (s *SimProducer) Evidence(_ context.Context, reportData [64]byte) ([]byte, [][]byte, error) {
	ev, err := verify.SignSimEvidence(s.root, s.measurement, reportData)
	return ev, nil, err
}

// Attest makes this node's bundle for one epoch: it binds the ephemeral public key to the
// node's identity and the epoch through the producer's evidence, and signs that binding
// with the node's libp2p identity key (whose peer ID the bundle names).
func Attest(ctx context.Context, p Producer, network, run string, identity crypto.PrivKey, epoch uint64, ephemeral ed25519.PublicKey) (*verify.Bundle, error) {
	if identity == nil {
		return nil, fmt.Errorf("making bundle: no identity key")
	}
	id, err := peer.IDFromPrivateKey(identity)
	if err != nil {
		return nil, fmt.Errorf("making bundle: identity key: %w", err)
	}
	peerID := id.String()
	seed := verify.EpochSeed(network, run, epoch)
	rd := verify.ReportData(network, run, peerID, ephemeral, seed[:])
	ev, endorsements, err := p.Evidence(ctx, rd)
	if err != nil {
		return nil, fmt.Errorf("producing %s evidence: %w", p.Kind(), err)
	}
	b := &verify.Bundle{
		Version: verify.BundleVersion, Kind: p.Kind(), Evidence: ev, Endorsements: endorsements,
		EphemeralKey: append([]byte(nil), ephemeral...), PeerID: peerID, Network: network, Run: run, Epoch: epoch,
	}
	if err := b.SignIdentity(identity); err != nil {
		return nil, fmt.Errorf("making bundle: %w", err)
	}
	if _, err := b.Marshal(); err != nil {
		return nil, fmt.Errorf("making bundle: %w", err)
	}
	return b, nil
}

// EpochOf returns the attestation epoch of a round.
func EpochOf(round, epochRounds uint64) uint64 {
	if epochRounds == 0 {
		return 0
	}
	return round / epochRounds
}
