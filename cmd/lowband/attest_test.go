package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sevdata "github.com/google/go-sev-guest/verify/testdata"
	tdxdata "github.com/google/go-tdx-guest/testing/testdata"
)

// runCLI runs the CLI in-process and returns stdout, stderr and the exit status.
func runCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := runMain(append([]string{"lowband"}, args...), &out, &errOut)
	return out.String(), errOut.String(), code
}

func writeTemp(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

type verifyJSON struct {
	OK                 bool   `json:"ok"`
	Kind               string `json:"kind"`
	Error              string `json:"error"`
	Detail             string `json:"detail"`
	Measurement        string `json:"measurement"`
	ReportData         string `json:"report_data"`
	MeasurementChecked bool   `json:"measurement_checked"`
	Insecure           bool   `json:"insecure"`
}

func verifyCLI(t *testing.T, args ...string) (verifyJSON, int) {
	t.Helper()
	out, stderr, code := runCLI(t, append([]string{"attest", "verify"}, args...)...)
	var v verifyJSON
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("output is not one JSON object: %v\nstdout: %s\nstderr: %s", err, out, stderr)
	}
	if v.OK != (code == 0) {
		t.Fatalf("ok=%v with exit status %d", v.OK, code)
	}
	return v, code
}

const snpMeasurement = "b07af9620f3b839b47996422ddec6058338951d984e312115131ea82705eaf5b6bdf8a9ece31a5a608eb0cf2e4872b01"

func TestAttestVerifySNP(t *testing.T) {
	dir := t.TempDir()
	report := writeTemp(t, dir, "report.bin", sevdata.AttestationBytes)
	vcek := writeTemp(t, dir, "vcek.der", sevdata.VcekBytes)
	now := "2024-01-01T00:00:00Z"

	// The production default refuses the sample: its guest policy allows debugging.
	v, code := verifyCLI(t, report, "--kind", "sev-snp", "--certs", vcek, "--now", now, "--json")
	if code != 1 || v.Error != "debug_enabled" {
		t.Fatalf("default policy: %+v exit %d", v, code)
	}
	debug := writeTemp(t, dir, "debug.toml", []byte("kinds = [\"sev-snp\"]\n[snp]\nallow_debug = true\n"))
	v, code = verifyCLI(t, report, "--kind", "sev-snp", "--certs", vcek, "--now", now, "--policy", debug, "--json")
	if code != 0 || v.Kind != "sev-snp" || v.Measurement != snpMeasurement || v.MeasurementChecked || !strings.HasPrefix(v.ReportData, "0102030405") {
		t.Fatalf("debug allowed: %+v exit %d", v, code)
	}
	allow := writeTemp(t, dir, "allow.toml", []byte("kinds = [\"sev-snp\"]\n[snp]\nallow_debug = true\nmeasurements = [\""+strings.Repeat("ab", 48)+"\"]\n"))
	v, code = verifyCLI(t, report, "--kind", "sev-snp", "--certs", vcek, "--now", now, "--policy", allow, "--json")
	if code != 1 || v.Error != "measurement_not_allowed" {
		t.Fatalf("allow-list: %+v exit %d", v, code)
	}
	flipped := bytes.Clone(sevdata.AttestationBytes)
	flipped[0x90] ^= 1
	bad := writeTemp(t, dir, "flipped.bin", flipped)
	v, code = verifyCLI(t, bad, "--kind", "sev-snp", "--certs", vcek, "--now", now, "--policy", debug, "--json")
	if code != 1 || v.Error != "bad_signature" {
		t.Fatalf("flipped: %+v exit %d", v, code)
	}
	v, code = verifyCLI(t, report, "--kind", "sev-snp", "--now", now, "--json")
	if code != 1 || v.Error != "collateral_invalid" {
		t.Fatalf("no certificate: %+v exit %d", v, code)
	}
}

func TestAttestVerifyTDX(t *testing.T) {
	dir := t.TempDir()
	quote := writeTemp(t, dir, "quote.dat", tdxdata.RawQuote)
	out, _, code := runCLI(t, "attest", "verify", "--kind", "tdx", "--now", "2023-07-01T01:00:00Z", quote)
	if code != 0 || !strings.Contains(out, "OK: tdx") || !strings.Contains(out, "not checked") {
		t.Fatalf("genuine quote: exit %d\n%s", code, out)
	}
	v, code := verifyCLI(t, quote, "--kind", "tdx", "--now", "2060-01-01T00:00:00Z", "--json")
	if code != 1 || v.Error != "collateral_invalid" {
		t.Fatalf("expired chain: %+v exit %d", v, code)
	}
}

func TestAttestSimBundleAndVerify(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "root.key")
	out, _, code := runCLI(t, "attest", "sim-keygen", "--out", key)
	pub := strings.TrimSpace(strings.TrimPrefix(out, "sim root public key:"))
	if code != 0 || len(pub) != 64 {
		t.Fatalf("sim-keygen: exit %d %q", code, out)
	}
	if _, _, code := runCLI(t, "attest", "sim-keygen", "--out", key); code == 0 {
		t.Fatal("sim-keygen overwrote a key")
	}
	bundle, h := filepath.Join(dir, "b.cbor"), filepath.Join(dir, "home")
	if _, stderr, code := runCLI(t, "init", "--home", h, "--profile", "local"); code != 0 {
		t.Fatalf("init: exit %d %s", code, stderr)
	}
	_, stderr, code := runCLI(t, "attest", "sim-bundle", "--out", bundle, "--key", key, "--network", "testnet-00000000",
		"--run", "r1", "--home", h, "--epoch", "4", "--ephemeral-out", filepath.Join(dir, "eph.key"))
	if code != 0 {
		t.Fatalf("sim-bundle: exit %d %s", code, stderr)
	}

	// Production defaults refuse sim.
	v, code := verifyCLI(t, bundle, "--json")
	if code != 1 || v.Error != "sim_not_allowed" {
		t.Fatalf("default policy: %+v exit %d", v, code)
	}
	policy := writeTemp(t, dir, "sim.toml", []byte("kinds = [\"sim\"]\nsim_roots = [\""+pub+"\"]\nmax_age_epochs = 1\n"))
	v, code = verifyCLI(t, bundle, "--policy", policy, "--json")
	if code != 0 || v.Kind != "sim" || !v.Insecure || len(v.ReportData) != 128 {
		t.Fatalf("sim policy: %+v exit %d", v, code)
	}
	out, _, code = runCLI(t, "attest", "verify", "--policy", policy, bundle)
	if code != 0 || !strings.Contains(out, "INSECURE") {
		t.Fatalf("text output must flag sim as insecure: %s", out)
	}
	v, code = verifyCLI(t, bundle, "--policy", policy, "--epoch", "6", "--json")
	if code != 1 || v.Error != "stale" {
		t.Fatalf("old bundle: %+v exit %d", v, code)
	}
	other := writeTemp(t, dir, "other.toml", []byte("kinds = [\"sim\"]\n"))
	v, code = verifyCLI(t, bundle, "--policy", other, "--json")
	if code != 1 || v.Error != "untrusted_root" {
		t.Fatalf("other root: %+v exit %d", v, code)
	}
	garbage := writeTemp(t, dir, "garbage", []byte("not a bundle"))
	v, code = verifyCLI(t, garbage, "--json")
	if code != 1 || v.Error != "malformed" {
		t.Fatalf("garbage: %+v exit %d", v, code)
	}
}

func TestAttestVerifyUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"attest", "verify"},
		{"attest", "verify", "a", "b"},
		{"attest", "verify", "x", "--kind", "sgx"},
		{"attest", "verify", filepath.Join(t.TempDir(), "missing")},
		{"attest", "verify", "x", "--bogus"},
	} {
		out, stderr, code := runCLI(t, args...)
		if code != 1 || !strings.HasPrefix(stderr, "lowband: ") {
			t.Errorf("%v: exit %d stdout %q stderr %q", args, code, out, stderr)
		}
	}
}
