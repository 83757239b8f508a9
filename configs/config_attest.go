package configs

// AttestConfig selects this node's attestation producer.
type AttestConfig struct {
	// Producer is the kind of evidence this node produces: "sev-snp", "tdx" or "sim".
	Producer string `toml:"producer" comment:"evidence this node produces: sev-snp, tdx or sim"`
}

func defaultAttestConfig() AttestConfig { return AttestConfig{Producer: "sim"} }

func (a *AttestConfig) validate() error { return nil }
