package verify

import (
	"crypto/ed25519"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	sevdata "github.com/google/go-sev-guest/verify/testdata"
	tdxdata "github.com/google/go-tdx-guest/testing/testdata"
)

// TestUnusedEndorsementsRefused: evidence verifies only with exactly the endorsements it
// uses (SEV-SNP: its VCEK or VLEK; TDX and sim: none), so one attestation has no free
// variants that cost a full verification each and evade the cache.
func TestUnusedEndorsementsRefused(t *testing.T) {
	extra := []byte("an unused certificate")
	_, err := VerifyEvidence(KindSEVSNP, sevdata.AttestationBytes, [][]byte{sevdata.VcekBytes, extra}, snpTestPolicy(true), snpNow)
	wantClass(t, err, ClassMalformed)
	_, err = VerifyEvidence(KindTDX, tdxQuote, [][]byte{extra}, DefaultPolicy(KindTDX), tdxNow)
	wantClass(t, err, ClassMalformed)
	root := testKey(1)
	b := simBundle(t, root, 7)
	b.Endorsements = [][]byte{extra}
	_, err = Verify(b, simPolicy(root), seedFor(b), 7, testNow)
	wantClass(t, err, ClassMalformed)
}

// TestTrailingBytesRefused: bytes after the evidence are refused, for every kind.
func TestTrailingBytesRefused(t *testing.T) {
	_, err := VerifyEvidence(KindTDX, append(append([]byte(nil), tdxQuote...), 0), nil, DefaultPolicy(KindTDX), tdxNow)
	wantClass(t, err, ClassMalformed)
	// The go-tdx-guest sample carries 39 bytes after its signed data; trimmed, it verifies.
	_, err = VerifyEvidence(KindTDX, tdxdata.RawQuote, nil, DefaultPolicy(KindTDX), tdxNow)
	wantClass(t, err, ClassMalformed)
	if _, err := VerifyEvidence(KindTDX, tdxQuote, nil, DefaultPolicy(KindTDX), tdxNow); err != nil {
		t.Fatalf("trimmed sample quote: %v", err)
	}
	_, err = VerifyEvidence(KindSEVSNP, append(append([]byte(nil), sevdata.AttestationBytes...), 0), [][]byte{sevdata.VcekBytes}, snpTestPolicy(true), snpNow)
	wantClass(t, err, ClassMalformed)
	root := testKey(1)
	b := simBundle(t, root, 7)
	b.Evidence = append(b.Evidence, 0)
	_, err = Verify(b, simPolicy(root), seedFor(b), 7, testNow)
	wantClass(t, err, ClassMalformed)
}

// TestPolicyTDXMRTDWithoutRTMRsRefused: a policy that pins the TD firmware (MRTD) but not
// what it boots (RTMR0-2) is refused before use.
func TestPolicyTDXMRTDWithoutRTMRsRefused(t *testing.T) {
	p := DefaultPolicy(KindTDX)
	m := make([]byte, MeasurementSize)
	p.TDX.MRTDs = [][]byte{m}
	if err := p.Validate(); err == nil {
		t.Fatal("MRTD allow-list without RTMR allow-lists accepted")
	}
	p.TDX.RTMRs = [4][][]byte{{m}, {m}, {m}}
	if err := p.Validate(); err != nil {
		t.Fatalf("MRTD with RTMR0-2: %v", err)
	}
}

// TestBundlePeerIDNotCanonicalRefused: a bundle made, bound and identity-signed in the
// CIDv1 form of a peer ID is malformed: one peer has one name in bundles, shards and the
// ledger.
func TestBundlePeerIDNotCanonicalRefused(t *testing.T) {
	root := testKey(1)
	id := testPeer(t, 9)
	cidForm := peer.ToCid(id).String()
	eph := testKey(9).Public().(ed25519.PublicKey)
	seed := EpochSeed("testnet-1a2b3c4d", "run-1", 7)
	ev, err := SignSimEvidence(root, simMeasurement(), ReportData("testnet-1a2b3c4d", "run-1", cidForm, eph, seed[:]))
	if err != nil {
		t.Fatal(err)
	}
	b := &Bundle{Version: BundleVersion, Kind: KindSim, Evidence: ev, EphemeralKey: eph, PeerID: cidForm,
		Network: "testnet-1a2b3c4d", Run: "run-1", Epoch: 7}
	if b.IdentitySig, err = testIdentity(9).Sign(b.IdentityMessage()); err != nil {
		t.Fatal(err)
	}
	_, err = Verify(b, simPolicy(root), seed[:], 7, testNow)
	wantClass(t, err, ClassMalformed)
}

// TestEpochWindowAtTheTop: the window has no overflow: a bundle of the current epoch is
// accepted even at the largest epoch, and one far ahead of epoch 0 is not.
func TestEpochWindowAtTheTop(t *testing.T) {
	const top = ^uint64(0)
	if err := checkEpoch(top, top, 0); err != nil {
		t.Fatalf("current epoch at the top: %v", err)
	}
	if err := checkEpoch(top, top-1, 0); err != nil {
		t.Fatalf("one ahead at the top: %v", err)
	}
	if err := checkEpoch(top, 0, top); ClassOf(err) != ClassStale {
		t.Fatalf("far ahead: %v, want stale", err)
	}
}
