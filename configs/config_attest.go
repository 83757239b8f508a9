package configs

import (
	"encoding/hex"
	"slices"
)

// AttestConfig selects this node's attestation producer and where it finds its inputs.
type AttestConfig struct {
	// Producer is the kind of evidence this node produces: "sev-snp", "tdx" or "sim". The
	// node refuses to start when its network does not accept that kind.
	Producer string `toml:"producer" comment:"evidence this node produces: sev-snp, tdx or sim"`
	// SimKeyFile holds the sim root's private key (hex ed25519 seed), relative to the home
	// directory unless absolute. Empty: the public devnet root (insecure by design).
	SimKeyFile string `toml:"sim_key_file" comment:"sim root key file (hex seed), relative to home; empty: the public devnet root"`
	// SimMeasurement is the measurement sim evidence claims (hex, 48 bytes). Empty: zeros.
	SimMeasurement string `toml:"sim_measurement" comment:"measurement claimed by sim evidence, hex 48 bytes (empty: zeros)"`
	// TDXCollateralDir holds Intel PCS responses for verifying TDX peers: tcbinfo.json,
	// qeidentity.json, tcbinfo-chain.pem, qeidentity-chain.pem. Empty: the quote's signature
	// chain is checked but not its TCB status.
	TDXCollateralDir string `toml:"tdx_collateral_dir" comment:"Intel PCS collateral for verifying TDX peers (empty: chain only, no TCB status)"`
}

func defaultAttestConfig() AttestConfig { return AttestConfig{Producer: KindSim} }

func (a *AttestConfig) validate() error {
	if !slices.Contains(AttestKinds, a.Producer) {
		return keyErr("producer", "unknown producer %q (want one of %v)", a.Producer, AttestKinds)
	}
	if a.SimMeasurement != "" {
		if b, err := hex.DecodeString(a.SimMeasurement); err != nil || len(b) != measurementSize {
			return keyErr("sim_measurement", "want %d bytes of hex", measurementSize)
		}
	}
	return nil
}
