package incentives_test

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"testing"
	"time"

	"github.com/google/go-sev-guest/abi"
	sevtest "github.com/google/go-sev-guest/testing"
	"github.com/google/go-sev-guest/verify/trust"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
	"github.com/lowband/lowband/verify"
)

// wantRefused fails unless the checker refuses e as proving nothing.
func wantRefused(t *testing.T, c incentives.EvidenceChecker, e *incentives.Evidence) {
	t.Helper()
	off, err := c.Check(e)
	if err == nil {
		t.Fatalf("evidence accepted: %v", off)
	}
	if !incentives.IsBadEvidence(err) {
		t.Fatalf("refused with %v, want bad evidence", err)
	}
	t.Logf("refused: %v", err)
}

// TestFramingWithSimRefused: on a sim network anyone holds the root, so an attacker can make
// genuine sim evidence of a refused measurement bound to its victim's peer ID and its own
// ephemeral key. Without the victim's identity signature it proves nothing.
func TestFramingWithSimRefused(t *testing.T) {
	fx := incentivestest.New("testnet", "run-1")
	b := fx.Frame("victim", "attacker")
	s := fx.Shard("attacker", b, 3, 0, []byte("payload"))
	if s.Header.Peer != incentivestest.PeerID("victim") {
		t.Fatal("test setup: the shard does not name the victim")
	}
	wantRefused(t, fx.Checker(), incentives.NewInvalidAttestation(b, incentivestest.Signed(s)))
	// The victim's own refused bundle still proves its offence.
	if _, err := fx.Checker().Check(fx.InvalidAttestation("victim", 3, verify.ClassMeasurementNotAllowed)); err != nil {
		t.Fatalf("the victim's own bundle: %v", err)
	}
}

// TestForgedEquivocationWithoutAllowListRefused: with no measurement allow-list any sim
// bundle under the network's root verifies; an attacker signing two headers in its victim's
// name under such a bundle proves nothing without the victim's identity signature.
func TestForgedEquivocationWithoutAllowListRefused(t *testing.T) {
	fx := incentivestest.New("testnet", "run-1")
	c := fx.Checker()
	c.Policy.SimMeasurements = nil
	b := fx.Frame("victim", "attacker")
	x := fx.Shard("attacker", b, 3, 0, []byte("one"))
	y := fx.Shard("attacker", b, 3, 0, []byte("two"))
	wantRefused(t, c, incentives.NewEquivocation(b, incentivestest.Signed(x), incentivestest.Signed(y)))
	if _, err := c.Check(fx.Equivocation("victim", 3, 0, "x")); err != nil {
		t.Fatalf("the victim's own equivocation: %v", err)
	}
}

// snpTime is when the fake AMD chain below was made; snpCheckTime is inside its validity.
var (
	snpTime      = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	snpCheckTime = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
)

// genuineSNP returns an SEV-SNP report of a debug guest with measurement zero whose user
// data is reportData, signed by the VCEK of go-sev-guest's test-only AMD chain, and the AMD
// roots (ARK, ASK) that chain ends in: for a policy that pins them, a genuine report of an
// image that no allow-list names, from a guest that chose its own user data.
func genuineSNP(t *testing.T, reportData [64]byte) (report, vcek []byte, roots map[string][]*trust.AMDRootCerts) {
	t.Helper()
	signer, err := sevtest.DefaultTestOnlyCertChain("Milan-B0", snpTime)
	if err != nil {
		t.Fatal(err)
	}
	raw := sevtest.TestRawReport(reportData)
	report = raw[:abi.ReportSize]
	r, s, err := signer.Sign(abi.SignedComponent(report))
	if err != nil {
		t.Fatal(err)
	}
	if err := abi.SetSignature(r, s, report); err != nil {
		t.Fatal(err)
	}
	root := trust.AMDRootCertsProduct("Milan")
	root.ProductCerts = &trust.ProductCerts{Ark: signer.Ark, Ask: signer.Ask}
	return report, signer.Vcek.Raw, map[string][]*trust.AMDRootCerts{"Milan": {root}}
}

// snpFrame is invalid-attestation evidence against victim: a genuine SEV-SNP report whose
// user data binds the victim's peer ID to the attacker's ephemeral key, in a bundle that
// names the victim and is signed by the attacker's identity. It sets c's SNP roots to the
// chain that signed the report.
func snpFrame(t *testing.T, c *incentives.Checker, victim, attacker string) *incentives.Evidence {
	t.Helper()
	eph := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	pub := eph.Public().(ed25519.PublicKey)
	peerID := incentivestest.PeerID(victim)
	seed := verify.EpochSeed(c.Network, c.Run, 0)
	report, vcek, roots := genuineSNP(t, verify.ReportData(c.Network, c.Run, peerID, pub, seed[:]))
	c.Policy.SNP.Roots = roots
	b := &verify.Bundle{Version: verify.BundleVersion, Kind: verify.KindSEVSNP, Evidence: report,
		Endorsements: [][]byte{vcek}, EphemeralKey: pub, PeerID: peerID, Network: c.Network, Run: c.Run}
	sig, err := incentivestest.Identity(attacker).Sign(b.IdentityMessage())
	if err != nil {
		t.Fatal(err)
	}
	b.IdentitySig = sig
	enc, err := b.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	bh := b.Hash()
	s, err := verify.SignShard(eph, verify.ShardHeader{Network: c.Network, Run: c.Run, Round: 3, Peer: b.PeerID,
		Count: 1, BundleHash: bh[:]}, []byte("payload"))
	if err != nil {
		t.Fatal(err)
	}
	return incentives.NewInvalidAttestation(enc, incentivestest.Signed(s))
}

func snpChecker() *incentives.Checker {
	p := verify.DefaultPolicy(verify.KindSEVSNP)
	p.Network, p.Run = "testnet", "run-1"
	return &incentives.Checker{Network: "testnet", Run: "run-1", Policy: p,
		EpochTime: func(uint64) time.Time { return snpCheckTime }}
}

// TestFramingWithSNPReportOfAnotherImageRefused: a genuine SEV-SNP report of an image the
// network does not allow, bound by its guest to the victim's peer ID, proves nothing.
func TestFramingWithSNPReportOfAnotherImageRefused(t *testing.T) {
	c := snpChecker()
	c.Policy.SNP.AllowDebug = true
	c.Policy.SNP.Measurements = [][]byte{bytes.Repeat([]byte{1}, verify.MeasurementSize)}
	wantRefused(t, c, snpFrame(t, c, "victim", "attacker"))
	// Had the victim signed that bundle itself, the same report would prove its offence.
	if off, err := c.Check(snpFrame(t, c, "victim", "victim")); err != nil || off.Peer != incentivestest.PeerID("victim") {
		t.Fatalf("the victim's own bundle: %v %v", off, err)
	}
}

// TestFramingWithSNPDebugGuestRefused: a genuine report of a debug guest, bound by its
// guest to the victim's peer ID, proves nothing.
func TestFramingWithSNPDebugGuestRefused(t *testing.T) {
	c := snpChecker()
	wantRefused(t, c, snpFrame(t, c, "victim", "attacker"))
}

// TestCheckerWithoutEpochTimeRefuses: a checker with no time base refuses evidence that
// needs an attestation checked, with a clear error, rather than pass a zero time to verify.
func TestCheckerWithoutEpochTimeRefuses(t *testing.T) {
	fx := incentivestest.New("testnet", "run-1")
	c := fx.Checker()
	c.EpochTime = nil
	_, err := c.Check(fx.Equivocation("B", 3, 0, "x"))
	if !errors.Is(err, incentives.ErrNoEpochTime) || !errors.Is(err, incentives.ErrBadEvidence) {
		t.Fatalf("no epoch time: %v, want ErrNoEpochTime", err)
	}
}
