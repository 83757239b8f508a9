package incentives_test

import (
	"crypto/ed25519"
	"errors"
	"testing"
	"time"

	sevdata "github.com/google/go-sev-guest/verify/testdata"

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

// snpFrame is invalid-attestation evidence against victim built on go-sev-guest's genuine
// sample report (a debug guest whose measurement the checker's policy may refuse), wrapped
// in a bundle that names the victim and is signed by the attacker's identity.
func snpFrame(t *testing.T, c *incentives.Checker, victim, attacker string) *incentives.Evidence {
	t.Helper()
	eph := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	b := &verify.Bundle{Version: verify.BundleVersion, Kind: verify.KindSEVSNP, Evidence: sevdata.AttestationBytes,
		Endorsements: [][]byte{sevdata.VcekBytes}, EphemeralKey: eph.Public().(ed25519.PublicKey),
		PeerID: incentivestest.PeerID(victim), Network: c.Network, Run: c.Run}
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
		EpochTime: func(uint64) time.Time { return time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC) }}
}

// TestFramingWithSNPReportOfAnotherImageRefused: a genuine SEV-SNP report of an image the
// network does not allow, wrapped in a bundle naming the victim, proves nothing.
func TestFramingWithSNPReportOfAnotherImageRefused(t *testing.T) {
	c := snpChecker()
	c.Policy.SNP.AllowDebug = true
	c.Policy.SNP.Measurements = [][]byte{make([]byte, verify.MeasurementSize)}
	wantRefused(t, c, snpFrame(t, c, "victim", "attacker"))
}

// TestFramingWithSNPDebugGuestRefused: a genuine report of a debug guest, wrapped in a
// bundle naming the victim, proves nothing.
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
