package attest

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/verify"
)

// maxInputFile caps what this package reads from one file (keys, certificates, evidence,
// collateral are all small).
const maxInputFile = 1 << 20

// ReadFile reads a small file, refusing anything over 1 MiB.
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxInputFile+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(data) > maxInputFile {
		return nil, fmt.Errorf("reading %s: larger than %d bytes", path, maxInputFile)
	}
	return data, nil
}

// ReadSimKey reads a sim root key file: the hex ed25519 seed (64 hex digits) on one line.
func ReadSimKey(path string) (ed25519.PrivateKey, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("sim key: %w", err)
	}
	seed, err := hex.DecodeString(string(bytes.TrimSpace(data)))
	if err != nil || len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("sim key %s: want %d bytes of hex", path, ed25519.SeedSize)
	}
	return ed25519.NewKeyFromSeed(seed), nil
}

// WriteSimKey writes a sim root key file (mode 0600). It refuses to replace an existing file.
func WriteSimKey(path string, key ed25519.PrivateKey) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("writing sim key: %w", err)
	}
	_, err = fmt.Fprintln(f, hex.EncodeToString(key.Seed()))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing sim key %s: %w", path, err)
	}
	return nil
}

// ReadCertificates reads certificates from a file holding either one DER certificate or
// any number of PEM CERTIFICATE blocks, and returns them as DER.
func ReadCertificates(path string) ([][]byte, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	if !bytes.Contains(data, []byte("-----BEGIN")) {
		return [][]byte{data}, nil
	}
	var out [][]byte
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type == "CERTIFICATE" {
			out = append(out, block.Bytes)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no CERTIFICATE block", path)
	}
	return out, nil
}

// Collateral file names in a TDX collateral directory.
const (
	TCBInfoFile         = "tcbinfo.json"
	TCBInfoChainFile    = "tcbinfo-chain.pem"
	QEIdentityFile      = "qeidentity.json"
	QEIdentityChainFile = "qeidentity-chain.pem"
)

// LoadTDXCollateral reads Intel PCS responses saved as files in dir: tcbinfo.json and
// qeidentity.json (the response bodies) with their issuer chains tcbinfo-chain.pem and
// qeidentity-chain.pem (the response headers' PEM chains, signing certificate first).
func LoadTDXCollateral(dir string) (*verify.TDXCollateral, error) {
	var c verify.TDXCollateral
	for _, f := range []struct {
		name string
		dst  *[]byte
	}{{TCBInfoFile, &c.TCBInfo}, {TCBInfoChainFile, &c.TCBInfoChain}, {QEIdentityFile, &c.QEIdentity}, {QEIdentityChainFile, &c.QEIdentityChain}} {
		data, err := ReadFile(filepath.Join(dir, f.name))
		if err != nil {
			return nil, fmt.Errorf("TDX collateral: %w", err)
		}
		*f.dst = data
	}
	return &c, nil
}

// LoadPolicyFile reads an attestation policy file (see configs.ParseAttestSpec) and turns
// it into a verify.Policy.
func LoadPolicyFile(path string) (*verify.Policy, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	spec, err := configs.ParseAttestSpec(path, data)
	if err != nil {
		return nil, err
	}
	return PolicyFromSpec(*spec, "", "")
}

// CollateralFromConfig loads the TDX collateral the config names, resolving a relative
// directory against home. It returns nil, nil when none is configured.
func CollateralFromConfig(cfg configs.AttestConfig, home string) (*verify.TDXCollateral, error) {
	if cfg.TDXCollateralDir == "" {
		return nil, nil
	}
	dir := cfg.TDXCollateralDir
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(home, dir)
	}
	return LoadTDXCollateral(dir)
}
