package attest

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sevdata "github.com/google/go-sev-guest/verify/testdata"
	"github.com/google/go-tdx-guest/pcs"
	tdxtest "github.com/google/go-tdx-guest/testing"
	tdxdata "github.com/google/go-tdx-guest/testing/testdata"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/verify"
)

func parseAttest(t *testing.T, body string) configs.AttestSpec {
	t.Helper()
	a, err := configs.ParseAttestSpec("policy", []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return *a
}

func TestCheckProducerAllowed(t *testing.T) {
	hw := parseAttest(t, "")
	sim := parseAttest(t, "kinds = [\"sim\"]\n")
	snpOnly := parseAttest(t, "kinds = [\"sev-snp\"]\n")
	for _, tc := range []struct {
		producer string
		spec     configs.AttestSpec
		ok       bool
	}{
		{"sim", hw, false}, {"sim", sim, true}, {"sev-snp", hw, true}, {"tdx", hw, true},
		{"tdx", snpOnly, false}, {"sev-snp", sim, false}, {"sgx", hw, false},
	} {
		err := CheckProducerAllowed(tc.producer, tc.spec)
		if (err == nil) != tc.ok {
			t.Errorf("%s with kinds %v: %v", tc.producer, tc.spec.Kinds, err)
		}
		if err != nil && tc.producer != "sgx" && !errors.Is(err, ErrProducerNotAllowed) {
			t.Errorf("%s: %v does not wrap ErrProducerNotAllowed", tc.producer, err)
		}
	}
}

// A sim producer's bundle verifies under a spec that allows sim, and only under it.
func TestSimBundleEndToEnd(t *testing.T) {
	dir := t.TempDir()
	root := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{4}, 32))
	if err := WriteSimKey(filepath.Join(dir, "sim.key"), root); err != nil {
		t.Fatal(err)
	}
	prod, err := NewProducer(configs.AttestConfig{Producer: "sim", SimKeyFile: "sim.key"}, dir)
	if err != nil {
		t.Fatal(err)
	}
	eph := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{5}, 32)).Public().(ed25519.PublicKey)
	b, err := Attest(context.Background(), prod, "testnet-00000000", "r1", testIdentity(t), 3, eph)
	if err != nil {
		t.Fatal(err)
	}
	seed := verify.EpochSeed(b.Network, b.Run, b.Epoch)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

	spec := parseAttest(t, "kinds = [\"sim\"]\nsim_roots = [\""+hex.EncodeToString(root.Public().(ed25519.PublicKey))+"\"]\n")
	p, err := PolicyFromSpec(spec, "testnet-00000000", "r1")
	if err != nil {
		t.Fatal(err)
	}
	v, err := verify.Verify(b, p, seed[:], 3, now)
	if err != nil || !v.Insecure {
		t.Fatalf("sim bundle under a sim spec: %v %+v", err, v)
	}
	// The devnet root is not this network's root.
	p, _ = PolicyFromSpec(parseAttest(t, "kinds = [\"sim\"]\n"), "", "")
	if _, err := verify.Verify(b, p, seed[:], 3, now); verify.ClassOf(err) != verify.ClassUntrustedRoot {
		t.Fatalf("other sim root: %v", err)
	}
	p, _ = PolicyFromSpec(parseAttest(t, ""), "", "")
	if _, err := verify.Verify(b, p, seed[:], 3, now); verify.ClassOf(err) != verify.ClassSimNotAllowed {
		t.Fatalf("hardware-only spec: %v", err)
	}
}

func TestDevnetProducerMatchesDevnetSpec(t *testing.T) {
	prod, err := NewProducer(configs.AttestConfig{Producer: "sim"}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	spec, err := configs.ParseSpec("devnet", configs.DevnetSpec)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckProducerAllowed("sim", spec.Attest); err != nil {
		t.Fatal(err)
	}
	p, err := PolicyFromSpec(spec.Attest, spec.NetworkID(), spec.Run)
	if err != nil {
		t.Fatal(err)
	}
	eph := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{6}, 32)).Public().(ed25519.PublicKey)
	b, err := Attest(context.Background(), prod, spec.NetworkID(), spec.Run, testIdentity(t), 0, eph)
	if err != nil {
		t.Fatal(err)
	}
	seed := verify.EpochSeed(b.Network, b.Run, 0)
	if _, err := verify.Verify(b, p, seed[:], 0, time.Now()); err != nil {
		t.Fatalf("devnet bundle: %v", err)
	}
}

func TestPolicyFromSpecSNP(t *testing.T) {
	m := "b07af9620f3b839b47996422ddec6058338951d984e312115131ea82705eaf5b6bdf8a9ece31a5a608eb0cf2e4872b01"
	spec := parseAttest(t, "kinds = [\"sev-snp\"]\n[snp]\nallow_debug = true\nmeasurements = [\""+strings.ToUpper(m)+"\"]\n[snp.min_tcb]\nbootloader = 2\nmicrocode = 68\n")
	p, err := PolicyFromSpec(spec, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if p.AllowSim || len(p.Kinds) != 1 || hex.EncodeToString(p.SNP.Measurements[0]) != m || p.SNP.MinTCB.Microcode != 68 {
		t.Fatalf("policy %+v", p)
	}
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	v, err := verify.VerifyEvidence(verify.KindSEVSNP, sevdata.AttestationBytes, [][]byte{sevdata.VcekBytes}, p, now)
	if err != nil || !v.MeasurementChecked {
		t.Fatalf("sample under the spec's policy: %v", err)
	}
	p.SNP.AllowDebug = false
	_, err = verify.VerifyEvidence(verify.KindSEVSNP, sevdata.AttestationBytes, [][]byte{sevdata.VcekBytes}, p, now)
	if verify.ClassOf(err) != verify.ClassDebugEnabled {
		t.Fatalf("debug: %v", err)
	}
}

func TestLoadTDXCollateral(t *testing.T) {
	dir := t.TempDir()
	chain := func(h map[string][]string, key string) []byte {
		s, err := url.QueryUnescape(h[key][0])
		if err != nil {
			t.Fatal(err)
		}
		return []byte(s)
	}
	for name, data := range map[string][]byte{
		TCBInfoFile:         tdxdata.TcbInfoBody,
		QEIdentityFile:      tdxdata.QeIdentityBody,
		TCBInfoChainFile:    chain(tdxtest.TcbInfoHeader, pcs.TcbInfoIssuerChainPhrase),
		QEIdentityChainFile: chain(tdxtest.QeIdentityHeader, pcs.SgxQeIdentityIssuerChainPhrase),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, err := CollateralFromConfig(configs.AttestConfig{TDXCollateralDir: dir}, "/nonexistent")
	if err != nil {
		t.Fatal(err)
	}
	p := verify.DefaultPolicy(verify.KindTDX)
	p.TDX.Collateral = c
	// The library's sample TCB info lists newer levels than its sample quote (see verify's tests).
	_, err = verify.VerifyEvidence(verify.KindTDX, trimmedQuote(t), nil, p, time.Date(2023, 7, 1, 1, 0, 0, 0, time.UTC))
	if verify.ClassOf(err) != verify.ClassTCBTooLow {
		t.Fatalf("collateral from files: %v", err)
	}
	if err := os.Remove(filepath.Join(dir, QEIdentityFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadTDXCollateral(dir); err == nil {
		t.Fatal("missing file not reported")
	}
	if c, err := CollateralFromConfig(configs.AttestConfig{}, dir); c != nil || err != nil {
		t.Fatal("no directory configured should be no collateral")
	}
}

func TestSimKeyFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "k")
	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))
	if err := WriteSimKey(path, key); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v %v", st.Mode(), err)
	}
	got, err := ReadSimKey(path)
	if err != nil || !got.Equal(key) {
		t.Fatalf("read back: %v", err)
	}
	if err := WriteSimKey(path, key); err == nil {
		t.Fatal("overwrote an existing key")
	}
	if err := os.WriteFile(path+"2", []byte("zz\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadSimKey(path + "2"); err == nil {
		t.Fatal("bad key accepted")
	}
}

func TestReadCertificates(t *testing.T) {
	dir := t.TempDir()
	der := filepath.Join(dir, "vcek.der")
	pemPath := filepath.Join(dir, "chain.pem")
	os.WriteFile(der, sevdata.VcekBytes, 0o644)
	var buf bytes.Buffer
	pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: sevdata.VcekBytes})
	pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: []byte{1, 2}})
	os.WriteFile(pemPath, buf.Bytes(), 0o644)
	a, err := ReadCertificates(der)
	if err != nil || len(a) != 1 || !bytes.Equal(a[0], sevdata.VcekBytes) {
		t.Fatalf("DER: %v", err)
	}
	b, err := ReadCertificates(pemPath)
	if err != nil || len(b) != 2 || !bytes.Equal(b[0], sevdata.VcekBytes) {
		t.Fatalf("PEM: %v", err)
	}
}

// Off TEE hardware, the hardware producers fail with an error, never a panic.
func TestHardwareProducersOffHardware(t *testing.T) {
	for _, k := range []string{"sev-snp", "tdx"} {
		p, err := NewProducer(configs.AttestConfig{Producer: k}, t.TempDir())
		if err == nil {
			t.Logf("%s producer available (running in a TEE): %T", k, p)
			continue
		}
		if !strings.Contains(err.Error(), k) {
			t.Errorf("%s: error %q does not say which producer", k, err)
		}
	}
}

func TestEpochOf(t *testing.T) {
	if EpochOf(0, 100) != 0 || EpochOf(99, 100) != 0 || EpochOf(100, 100) != 1 || EpochOf(5, 0) != 0 {
		t.Fatal("epochs")
	}
}

func trimmedQuote(t *testing.T) []byte {
	t.Helper()
	q, err := verify.TrimTDXQuote(tdxdata.RawQuote)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// TestPolicyFromSpecRefusesMRTDWithoutRTMRs: a spec struct built without validation still
// cannot give a TDX policy that pins the firmware but not what it boots.
func TestPolicyFromSpecRefusesMRTDWithoutRTMRs(t *testing.T) {
	a := configs.AttestSpec{Kinds: []string{configs.KindTDX}, TDX: configs.TDXSpec{MRTDs: []string{strings.Repeat("ab", 48)}}}
	if _, err := PolicyFromSpec(a, "", ""); err == nil || !strings.Contains(err.Error(), "RTMR0") {
		t.Fatalf("MRTD without RTMRs: %v", err)
	}
}
