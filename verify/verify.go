package verify

import (
	"crypto/ed25519"
	"crypto/subtle"
	"errors"
	"slices"
	"time"
)

// Verdict is the result of a successful verification. Slices are owned by the verdict.
type Verdict struct {
	Kind Kind
	// Measurement is the launch measurement: SNP MEASUREMENT, TDX MRTD, or the sim
	// measurement (48 bytes each).
	Measurement []byte
	// ReportData is the report's 64-byte user data (the binding, for a bundle).
	ReportData []byte
	// MeasurementChecked is false when the policy has no allow-list for this kind, so any
	// measurement was accepted. Callers should say so.
	MeasurementChecked bool
	// Insecure is true for sim evidence: nothing protects the key or the code. Callers must
	// log every such acceptance as insecure.
	Insecure bool
	// Debug is true when the guest has debugging enabled and the policy allowed it.
	Debug bool
	// TCB describes the platform's TCB level, for logs.
	TCB string
	// Bound fields, set by Verify (empty for VerifyEvidence).
	EphemeralKey ed25519.PublicKey
	PeerID       string
	Epoch        uint64
	BundleHash   [32]byte
}

// Verify checks a bundle: the kind is accepted; the evidence chain verifies offline against
// pinned roots (never roots from the bundle); the policy holds (measurement allow-list,
// debug off, VMPL, minimum TCB); the epoch is within the policy's window of currentEpoch;
// the peer's libp2p identity key (embedded in b.PeerID) signed the bundle's binding
// (identity_mismatch otherwise); and the report's user data equals ReportData(b.Network,
// b.Run, b.PeerID, b.EphemeralKey, epochSeed). epochSeed is the seed of the bundle's epoch
// (normally EpochSeed(network, run, b.Epoch)); now is the time at which certificates must
// be valid, and must not be zero (no library is left to read the clock).
//
// The caller must still check that b.PeerID is the peer that sent or signed what the bundle
// vouches for. Every error is an *Error; Verify is safe for concurrent use.
func Verify(b *Bundle, p *Policy, epochSeed []byte, currentEpoch uint64, now time.Time) (*Verdict, error) {
	if err := checkNow(now); err != nil {
		return nil, err
	}
	if err := b.check(); err != nil {
		return nil, err
	}
	if p.Network != "" && p.Network != b.Network {
		return nil, errorf(ClassBindingMismatch, nil, "bundle is for network %q, not %q", b.Network, p.Network)
	}
	if p.Run != "" && p.Run != b.Run {
		return nil, errorf(ClassBindingMismatch, nil, "bundle is for run %q, not %q", b.Run, p.Run)
	}
	if err := checkEpoch(b.Epoch, currentEpoch, p.MaxAgeEpochs); err != nil {
		return nil, err
	}
	if err := b.checkIdentity(); err != nil {
		return nil, err
	}
	v, err := VerifyEvidence(b.Kind, b.Evidence, b.Endorsements, p, now)
	if err != nil {
		return nil, err
	}
	want := ReportData(b.Network, b.Run, b.PeerID, b.EphemeralKey, epochSeed)
	if subtle.ConstantTimeCompare(want[:], v.ReportData) != 1 {
		return nil, errorf(ClassBindingMismatch, nil, "report data is not the binding of this bundle's network, run, peer, key and epoch seed")
	}
	v.EphemeralKey = slices.Clone(b.EphemeralKey)
	v.PeerID = b.PeerID
	v.Epoch = b.Epoch
	v.BundleHash = b.Hash()
	return v, nil
}

// VerifyEvidence checks raw evidence of one kind against the policy, without a binding:
// the verdict's ReportData is whatever the report carries. The CLI uses it for raw SNP
// reports and TDX quotes; Verify uses it for bundles. now must not be zero.
func VerifyEvidence(kind Kind, evidence []byte, endorsements [][]byte, p *Policy, now time.Time) (*Verdict, error) {
	if err := checkNow(now); err != nil {
		return nil, err
	}
	switch kind {
	case KindSEVSNP, KindTDX, KindSim:
	default:
		return nil, errorf(ClassUnsupportedKind, nil, "unknown kind %q", kind)
	}
	if kind == KindSim && !p.AllowSim {
		return nil, errorf(ClassSimNotAllowed, nil, "the policy does not allow simulated evidence")
	}
	if kind != KindSim && !p.accepts(kind) {
		return nil, errorf(ClassUnsupportedKind, nil, "the policy does not accept kind %q", kind)
	}
	if err := checkEndorsementCount(kind, endorsements); err != nil {
		return nil, err
	}
	switch kind {
	case KindSEVSNP:
		return verifySNP(evidence, endorsements, &p.SNP, now)
	case KindTDX:
		return verifyTDX(evidence, &p.TDX, now)
	default:
		return verifySim(evidence, p)
	}
}

// checkEndorsementCount refuses endorsements the evidence does not use: SEV-SNP uses
// exactly its VCEK or VLEK (the AMD roots are pinned), TDX quotes carry their own PCK chain,
// and sim evidence has none. Unused bytes would make free variants of one attestation.
func checkEndorsementCount(kind Kind, endorsements [][]byte) error {
	used := 0
	if kind == KindSEVSNP {
		used = 1
	}
	if len(endorsements) > used {
		return errorf(ClassMalformed, nil, "%d endorsements for %s evidence, which uses %d", len(endorsements), kind, used)
	}
	return nil
}

// ErrZeroTime is wrapped (class collateral_invalid) when a verification is asked at the
// zero time. crypto/x509, go-sev-guest and go-tdx-guest read the clock when given a zero
// time, and a verdict must never depend on the verifier's clock.
var ErrZeroTime = errors.New("verification time is zero; pass the time explicitly")

func checkNow(now time.Time) error {
	if now.IsZero() {
		return &Error{Class: ClassCollateralInvalid, Detail: "no time to judge certificates at", Err: ErrZeroTime}
	}
	return nil
}

// checkEpoch accepts epoch at current when it is at most one ahead and at most maxAge behind.
func checkEpoch(epoch, current, maxAge uint64) error {
	if epoch > current && epoch-current > 1 || current > epoch && current-epoch > maxAge {
		return errorf(ClassStale, nil, "bundle epoch %d at current epoch %d (max age %d)", epoch, current, maxAge)
	}
	return nil
}

// inAllowList reports whether m is in list, in constant time per entry.
func inAllowList(m []byte, list [][]byte) bool {
	found := false
	for _, a := range list {
		if subtle.ConstantTimeCompare(m, a) == 1 {
			found = true
		}
	}
	return found
}
