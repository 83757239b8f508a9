package verify

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
)

var testNow = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// testKey returns a deterministic ed25519 key from a seed byte.
func testKey(b byte) ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{b}, ed25519.SeedSize))
}

func simMeasurement() []byte { return bytes.Repeat([]byte{0x5a}, MeasurementSize) }

func simPolicy(root ed25519.PrivateKey) *Policy {
	return &Policy{AllowSim: true, SimRoots: [][]byte{root.Public().(ed25519.PublicKey)}, MaxAgeEpochs: 2}
}

func simBundle(t *testing.T, root ed25519.PrivateKey, epoch uint64) *Bundle {
	t.Helper()
	b, err := NewSimBundle(root, simMeasurement(), "testnet-1a2b3c4d", "run-1", testIdentity(9), epoch, testKey(9).Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func seedFor(b *Bundle) []byte {
	s := EpochSeed(b.Network, b.Run, b.Epoch)
	return s[:]
}

func TestSimAcceptedOnlyWhenAllowed(t *testing.T) {
	root := testKey(1)
	b := simBundle(t, root, 7)
	v, err := Verify(b, simPolicy(root), seedFor(b), 7, testNow)
	if err != nil {
		t.Fatalf("sim allowed: %v", err)
	}
	if !v.Insecure || v.Kind != KindSim || v.PeerID != b.PeerID || v.Epoch != 7 || v.BundleHash != b.Hash() ||
		!bytes.Equal(v.EphemeralKey, b.EphemeralKey) || v.MeasurementChecked {
		t.Fatalf("verdict %+v", v)
	}

	p := simPolicy(root)
	p.AllowSim = false
	p.Kinds = []Kind{KindSim, KindSEVSNP} // listing the kind is not enough
	_, err = Verify(b, p, seedFor(b), 7, testNow)
	wantClass(t, err, ClassSimNotAllowed)
	_, err = Verify(b, DefaultPolicy(KindSEVSNP, KindTDX), seedFor(b), 7, testNow)
	wantClass(t, err, ClassSimNotAllowed)
}

func TestSimUntrustedRootAndBadSignature(t *testing.T) {
	root := testKey(1)
	b := simBundle(t, root, 7)
	_, err := Verify(b, simPolicy(testKey(2)), seedFor(b), 7, testNow)
	wantClass(t, err, ClassUntrustedRoot)

	e, err := decodeSim(b.Evidence)
	if err != nil {
		t.Fatal(err)
	}
	e.Report.Measurement[0] ^= 1
	b.Evidence, err = encMode.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Verify(b, simPolicy(root), seedFor(b), 7, testNow)
	wantClass(t, err, ClassBadSignature)
}

func TestSimMeasurementAllowList(t *testing.T) {
	root := testKey(1)
	b := simBundle(t, root, 7)
	p := simPolicy(root)
	p.SimMeasurements = [][]byte{bytes.Repeat([]byte{1}, MeasurementSize)}
	_, err := Verify(b, p, seedFor(b), 7, testNow)
	wantClass(t, err, ClassMeasurementNotAllowed)
	p.SimMeasurements = append(p.SimMeasurements, simMeasurement())
	if v, err := Verify(b, p, seedFor(b), 7, testNow); err != nil || !v.MeasurementChecked {
		t.Fatalf("allowed: %v %+v", err, v)
	}
}

// Each bound field, changed after the evidence was made (and the bundle signed again by
// the identity it names), breaks the binding.
func TestBindingMismatchOnEachField(t *testing.T) {
	root := testKey(1)
	for _, tc := range boundFieldChanges() {
		t.Run(tc.name, func(t *testing.T) {
			b := simBundle(t, root, 7)
			seed, id := tc.change(b, seedFor(b))
			if err := b.SignIdentity(id); err != nil {
				t.Fatal(err)
			}
			_, err := Verify(b, simPolicy(root), seed, 7, testNow)
			wantClass(t, err, ClassBindingMismatch)
		})
	}
	// Unchanged, it verifies: the failures above are the binding, not the setup.
	b := simBundle(t, root, 7)
	if _, err := Verify(b, simPolicy(root), seedFor(b), 7, testNow); err != nil {
		t.Fatal(err)
	}
}

type fieldChange struct {
	name   string
	change func(b *Bundle, seed []byte) ([]byte, crypto.PrivKey)
}

// boundFieldChanges change one bound field of a bundle of testIdentity(9) and return the
// seed and the identity that the changed bundle names.
func boundFieldChanges() []fieldChange {
	return []fieldChange{
		{"network", func(b *Bundle, s []byte) ([]byte, crypto.PrivKey) {
			b.Network = "othernet-00000000"
			return s, testIdentity(9)
		}},
		{"run", func(b *Bundle, s []byte) ([]byte, crypto.PrivKey) { b.Run = "run-2"; return s, testIdentity(9) }},
		{"peer ID", func(b *Bundle, s []byte) ([]byte, crypto.PrivKey) {
			id, _ := peer.IDFromPrivateKey(testIdentity(10))
			b.PeerID = id.String()
			return s, testIdentity(10)
		}},
		{"ephemeral key", func(b *Bundle, s []byte) ([]byte, crypto.PrivKey) {
			b.EphemeralKey = testKey(10).Public().(ed25519.PublicKey)
			return s, testIdentity(9)
		}},
		{"epoch seed", func(b *Bundle, s []byte) ([]byte, crypto.PrivKey) {
			x := EpochSeed(b.Network, b.Run, b.Epoch+1)
			return x[:], testIdentity(9)
		}},
	}
}

// TestFramingWithoutIdentitySignatureRefused: a bundle whose binding its peer's identity
// key did not sign is refused as identity_mismatch, whatever the evidence: a missing
// signature, a signature by someone else's key (an attacker naming its victim), or a bound
// field changed after signing.
func TestFramingWithoutIdentitySignatureRefused(t *testing.T) {
	root := testKey(1)
	b := simBundle(t, root, 7)
	b.IdentitySig = nil
	_, err := Verify(b, simPolicy(root), seedFor(b), 7, testNow)
	wantClass(t, err, ClassIdentityMismatch)
	if !errors.Is(err, ErrNoIdentitySig) {
		t.Fatalf("missing signature: %v, want ErrNoIdentitySig", err)
	}

	// The attacker (identity 10) signs a bundle naming the victim (identity 9).
	b = simBundle(t, root, 7)
	sig, err := testIdentity(10).Sign(b.IdentityMessage())
	if err != nil {
		t.Fatal(err)
	}
	b.IdentitySig = sig
	_, err = Verify(b, simPolicy(root), seedFor(b), 7, testNow)
	wantClass(t, err, ClassIdentityMismatch)
	if err := b.SignIdentity(testIdentity(10)); ClassOf(err) != ClassIdentityMismatch {
		t.Fatalf("signing a bundle that names another peer: %v", err)
	}

	for _, tc := range boundFieldChanges()[:4] {
		b := simBundle(t, root, 7)
		tc.change(b, nil)
		_, err := Verify(b, simPolicy(root), seedFor(b), 7, testNow)
		if ClassOf(err) != ClassIdentityMismatch {
			t.Errorf("%s changed after signing: %v, want identity_mismatch", tc.name, err)
		}
	}
}

func TestPolicyNetworkAndRun(t *testing.T) {
	root := testKey(1)
	b := simBundle(t, root, 7)
	p := simPolicy(root)
	p.Network, p.Run = b.Network, b.Run
	if _, err := Verify(b, p, seedFor(b), 7, testNow); err != nil {
		t.Fatal(err)
	}
	p.Network = "othernet-00000000"
	_, err := Verify(b, p, seedFor(b), 7, testNow)
	wantClass(t, err, ClassBindingMismatch)
	p.Network, p.Run = b.Network, "run-9"
	_, err = Verify(b, p, seedFor(b), 7, testNow)
	wantClass(t, err, ClassBindingMismatch)
}

func TestStaleness(t *testing.T) {
	root := testKey(1)
	b := simBundle(t, root, 10)
	p := simPolicy(root) // MaxAgeEpochs 2
	for _, tc := range []struct {
		current uint64
		ok      bool
	}{{8, false}, {9, true}, {10, true}, {11, true}, {12, true}, {13, false}, {1000, false}} {
		_, err := Verify(b, p, seedFor(b), tc.current, testNow)
		if tc.ok && err != nil {
			t.Errorf("current %d: %v", tc.current, err)
		}
		if !tc.ok && ClassOf(err) != ClassStale {
			t.Errorf("current %d: %v, want stale", tc.current, err)
		}
	}
}

func TestUnknownKind(t *testing.T) {
	_, err := VerifyEvidence(Kind("sgx"), []byte{1}, nil, DefaultPolicy(KindSEVSNP), testNow)
	wantClass(t, err, ClassUnsupportedKind)
}

func TestReportDataIsInjective(t *testing.T) {
	// Moving bytes between adjacent fields changes the binding.
	a := ReportData("ab", "c", "p", []byte{1}, []byte{2})
	b := ReportData("a", "bc", "p", []byte{1}, []byte{2})
	if a == b {
		t.Fatal("field boundary not bound")
	}
	r := rand.New(rand.NewPCG(1, 2))
	seen := map[[64]byte]bool{}
	for i := 0; i < 200; i++ {
		k := make([]byte, 32)
		for j := range k {
			k[j] = byte(r.IntN(256))
		}
		d := ReportData("n", "r", "p", k, nil)
		if seen[d] {
			t.Fatal("collision")
		}
		seen[d] = true
	}
}

func TestClassOf(t *testing.T) {
	if ClassOf(nil) != "" {
		t.Fatal("nil has a class")
	}
	err := errorf(ClassStale, nil, "x")
	if !errorsIs(err, &Error{Class: ClassStale}) || errorsIs(err, &Error{Class: ClassMalformed}) {
		t.Fatal("errors.Is by class")
	}
}

func TestSimEvidenceMustBeCanonical(t *testing.T) {
	root := testKey(1)
	b := simBundle(t, root, 7)
	// The same evidence with a non-minimal length header on its outer map is refused.
	if b.Evidence[0] != 0xa2 {
		t.Fatalf("evidence starts with %#x, want a two-entry map", b.Evidence[0])
	}
	b.Evidence = append([]byte{0xb8, 0x02}, b.Evidence[1:]...)
	_, err := Verify(b, simPolicy(root), seedFor(b), 7, testNow)
	wantClass(t, err, ClassMalformed)
}
