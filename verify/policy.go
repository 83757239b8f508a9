package verify

import (
	"crypto/x509"
	"fmt"
	"slices"

	"github.com/google/go-sev-guest/verify/trust"
)

// Policy is what a network accepts. The zero Policy accepts nothing. Policies are read-only
// once in use: Verify never modifies one, and one may be shared between goroutines.
type Policy struct {
	// Network and Run, when set, must equal the bundle's; a bundle for another network or
	// run is a binding mismatch.
	Network, Run string
	// Kinds lists the accepted hardware TEE kinds (KindSEVSNP, KindTDX).
	Kinds []Kind
	// AllowSim, and nothing else, accepts simulated evidence signed by one of SimRoots.
	// Never in production: a sim verdict is always marked Insecure.
	AllowSim bool
	// SimRoots are the ed25519 public keys (32 bytes each) of the network's sim roots.
	SimRoots [][]byte
	// SimMeasurements is the allow-list of sim measurements (48 bytes); empty: not checked.
	SimMeasurements [][]byte
	SNP             SNPPolicy
	TDX             TDXPolicy
	// MaxAgeEpochs is how many epochs old a bundle may be: a bundle for epoch e is accepted
	// at current epoch c when e <= c+1 and c-e <= MaxAgeEpochs. One epoch ahead is
	// tolerated for peers whose clocks run slightly early.
	MaxAgeEpochs uint64
}

// SNPPolicy is the policy for AMD SEV-SNP reports.
type SNPPolicy struct {
	// Measurements is the allow-list of launch measurements (48 bytes each). Empty: the
	// measurement is not checked, and the verdict says so (MeasurementChecked false).
	Measurements [][]byte
	// AllowDebug accepts guests launched with debugging allowed. Never in production.
	AllowDebug bool
	// MaxVMPL is the highest (least privileged) VMPL accepted; 0 accepts only reports
	// requested from VMPL 0. A report from a higher VMPL fails as measurement_not_allowed:
	// the software identity of the requester is not the attested one.
	MaxVMPL uint32
	// MinTCB is the component-wise minimum of the reported (current) TCB.
	MinTCB SNPTCB
	// Roots, when non-nil, replaces the AMD roots that go-sev-guest embeds (keyed by product
	// line, e.g. "Milan"). The verifier pins these; roots sent by a peer are never used.
	Roots map[string][]*trust.AMDRootCerts
}

// SNPTCB is an SEV-SNP TCB version split into its security patch levels.
type SNPTCB struct {
	Bootloader, TEE, SNP, Microcode uint8
}

// TDXPolicy is the policy for Intel TDX quotes.
type TDXPolicy struct {
	// MRTDs is the allow-list of TD measurements (48 bytes each). Empty: not checked, and
	// the verdict says so. When set, RTMRs[0..2] must be set too (see Validate).
	MRTDs [][]byte
	// RTMRs[i] is the allow-list of runtime measurement register i (48 bytes each). An empty
	// list does not check that register.
	RTMRs [4][][]byte
	// AllowDebug accepts TDs with the DEBUG attribute. Never in production.
	AllowDebug bool
	// MinTeeTCBSVN is the component-wise minimum of the TEE TCB SVN (16 bytes), or nil.
	MinTeeTCBSVN []byte
	// Collateral is Intel's TCB info and QE identity. When set, the quote's TCB status and
	// QE identity are checked against it; when nil, only the signature chain is checked.
	Collateral *TDXCollateral
	// Roots, when non-nil, replaces the Intel SGX root CA that go-tdx-guest embeds.
	Roots *x509.CertPool
}

// TDXCollateral holds Intel PCS responses as fetched, read by the caller from files.
type TDXCollateral struct {
	TCBInfo         []byte // tcbinfo.json: the PCS response body
	TCBInfoChain    []byte // tcbinfo-chain.pem: its issuer chain (TCB signing cert, root)
	QEIdentity      []byte // qeidentity.json: the PCS response body
	QEIdentityChain []byte // qeidentity-chain.pem: its issuer chain
}

// DefaultPolicy is the production default for the given kinds: no sim, debug refused,
// VMPL 0, no allow-lists (measurements unchecked; verdicts say so), no minimum TCB, and
// bundles at most one epoch old.
func DefaultPolicy(kinds ...Kind) *Policy {
	return &Policy{Kinds: slices.Clone(kinds), MaxAgeEpochs: 1}
}

// Validate refuses policies that do not mean what they seem to: a TDX MRTD allow-list
// without allow-lists for RTMR0, RTMR1 and RTMR2. The MRTD measures only the TD firmware;
// the RTMRs measure its configuration, the kernel, and the command line and initrd, so the
// MRTD alone would admit any application on that firmware.
func (p *Policy) Validate() error {
	if len(p.TDX.MRTDs) == 0 {
		return nil
	}
	for i := range 3 {
		if len(p.TDX.RTMRs[i]) == 0 {
			return fmt.Errorf("TDX policy: an MRTD allow-list needs an allow-list for RTMR%d too", i)
		}
	}
	return nil
}

func (p *Policy) accepts(k Kind) bool { return slices.Contains(p.Kinds, k) }
