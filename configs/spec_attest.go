package configs

// AttestSpec is the network's attestation policy: which TEE evidence a node accepts.
type AttestSpec struct {
	// Kinds lists the accepted TEE kinds: "sev-snp", "tdx", "sim".
	Kinds []string `toml:"kinds" cbor:"1,keyasint"`
}

func (a *AttestSpec) validate() error { return nil }
