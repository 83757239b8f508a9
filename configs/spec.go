package configs

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"

	"github.com/fxamacker/cbor/v2"
)

// SpecVersion is the version of the network spec format this build reads.
const SpecVersion = 1

// Spec is the network spec: everything every node of one network must agree on.
//
// Bootstrap addresses are part of the file but not of the network's identity: they are
// operational hints, and an operator may add or remove them without forking the network.
// Everything else is hashed into the network ID.
type Spec struct {
	Version int    `toml:"version" cbor:"1,keyasint"`
	Name    string `toml:"name" cbor:"2,keyasint"`
	// Run names one training run inside the network; topics are per run.
	Run string `toml:"run" cbor:"3,keyasint"`
	// Bootstrap lists multiaddrs (with /p2p/ peer IDs) of bootstrap nodes. Not hashed.
	Bootstrap []string `toml:"bootstrap" cbor:"-"`

	Training   TrainingSpec   `toml:"training" cbor:"10,keyasint"`
	Attest     AttestSpec     `toml:"attest" cbor:"11,keyasint"`
	Incentives IncentivesSpec `toml:"incentives" cbor:"12,keyasint"`
	Time       TimeSpec       `toml:"time" cbor:"13,keyasint"`
	Round      RoundSpec      `toml:"round" cbor:"14,keyasint"`
	Agreement  AgreementSpec  `toml:"agreement" cbor:"15,keyasint"`
	Testing    TestingSpec    `toml:"testing" cbor:"16,keyasint"`
}

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)

// Validate checks the spec. Errors name the offending key.
func (s *Spec) Validate() error {
	if s.Version != SpecVersion {
		return &KeyError{Key: "version", Err: fmt.Errorf("unsupported spec version %d (this build reads %d)", s.Version, SpecVersion)}
	}
	if !nameRE.MatchString(s.Name) {
		return &KeyError{Key: "name", Err: errors.New("must be 1-32 characters of a-z, 0-9 and '-', starting with a letter or digit")}
	}
	if !nameRE.MatchString(s.Run) {
		return &KeyError{Key: "run", Err: errors.New("must be 1-32 characters of a-z, 0-9 and '-', starting with a letter or digit")}
	}
	for i, a := range s.Bootstrap {
		if err := checkPeerAddr(a); err != nil {
			return &KeyError{Key: fmt.Sprintf("bootstrap[%d]", i), Err: err}
		}
	}
	if err := s.Training.validate(); err != nil {
		return prefixKey("training", err)
	}
	if err := s.Attest.validate(); err != nil {
		return prefixKey("attest", err)
	}
	if err := s.Incentives.validate(); err != nil {
		return prefixKey("incentives", err)
	}
	if err := s.Time.validate(); err != nil {
		return prefixKey("time", err)
	}
	if err := s.Round.validate(); err != nil {
		return prefixKey("round", err)
	}
	if err := s.Agreement.validate(); err != nil {
		return prefixKey("agreement", err)
	}
	return nil
}

// specEnc encodes nil and empty lists and maps alike, so a spec hashes the same whether a
// list was written as [] or left out.
var specEnc = func() cbor.EncMode {
	opts := cbor.CoreDetEncOptions()
	opts.NilContainers = cbor.NilContainerAsEmpty
	m, err := opts.EncMode()
	if err != nil {
		panic(err) // static options; cannot fail
	}
	return m
}()

// RulesVersion is the version of the consensus rules a build runs: how it turns the same
// records, contributions and spec into θ, records and the ledger. It is hashed into every
// spec's Hash, so into the network ID on the wire: a build whose rules differ is on another
// network, never a node that votes in the same rounds and splits from the others. Bump it
// with any such change (2: a contribution the aggregation rule drops whole is marked in the
// record and earns nothing; 3: with outer momentum 0 the model state holds no momentum
// buffer, so its root and checkpoints cover θ alone). A home made under other rules does
// not replay: start a new one.
const RulesVersion = 3

// Hash is SHA-256 over the spec's canonical (core deterministic CBOR) encoding, without
// the bootstrap list, under the consensus rules' version (RulesVersion). Two files that
// parse to the same spec have the same hash, whatever their layout or comments.
func (s *Spec) Hash() [32]byte {
	b, err := specEnc.Marshal(s)
	if err != nil {
		// Every field is a plain value type; encoding cannot fail.
		panic(fmt.Sprintf("configs: encoding spec: %v", err))
	}
	return sha256.Sum256(append(fmt.Appendf(nil, "lowband/spec/v1/rules/%d\x00", RulesVersion), b...))
}

// NetworkID is the short name used on the wire: "<name>-<first 4 bytes of Hash in hex>".
// It appears in the DHT protocol (/lowband/<id>/kad/1.0.0), the gossip topics and the stream
// protocols, so nodes of two networks whose specs differ in any hashed field never talk.
func (s *Spec) NetworkID() string {
	h := s.Hash()
	return s.Name + "-" + hex.EncodeToString(h[:4])
}
