package verify

import (
	"bytes"
	"crypto/x509/pkix"
	"errors"
	"testing"
	"time"

	"github.com/google/go-sev-guest/abi"
	"github.com/google/go-sev-guest/verify/testdata"
	"github.com/google/go-sev-guest/verify/trust"
)

// snpNow is inside the validity of the sample VCEK (2022-09-24 to 2029-09-24).
var snpNow = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// The go-sev-guest sample: a Milan report (v2, VMPL 0, debug allowed by its guest policy)
// signed by the VCEK in testdata.VcekBytes.
const snpSampleMeasurement = "b07af9620f3b839b47996422ddec6058338951d984e312115131ea82705eaf5b6bdf8a9ece31a5a608eb0cf2e4872b01"

func snpTestPolicy(allowDebug bool) *Policy {
	p := DefaultPolicy(KindSEVSNP)
	p.SNP.AllowDebug = allowDebug
	return p
}

func verifySNPSample(t *testing.T, report []byte, p *Policy) (*Verdict, error) {
	t.Helper()
	return VerifyEvidence(KindSEVSNP, report, [][]byte{testdata.VcekBytes}, p, snpNow)
}

func TestSNPGenuineVerifies(t *testing.T) {
	v, err := verifySNPSample(t, testdata.AttestationBytes, snpTestPolicy(true))
	if err != nil {
		t.Fatalf("genuine report: %v", err)
	}
	if v.Kind != KindSEVSNP || hexOf(v.Measurement) != snpSampleMeasurement || v.MeasurementChecked || !v.Debug {
		t.Fatalf("verdict %+v", v)
	}
	if !bytes.HasPrefix(v.ReportData, []byte{1, 2, 3, 4, 5, 0}) {
		t.Fatalf("report data %x", v.ReportData)
	}
}

func TestSNPDefaultPolicyRefusesDebug(t *testing.T) {
	_, err := verifySNPSample(t, testdata.AttestationBytes, DefaultPolicy(KindSEVSNP))
	wantClass(t, err, ClassDebugEnabled)
}

func TestSNPFlippedByteIsBadSignature(t *testing.T) {
	signed := len(abi.SignedComponent(testdata.AttestationBytes))
	// Offsets across the signed body: version, guest policy, report data, measurement,
	// chip ID, and the last signed byte.
	for _, off := range []int{0x00, 0x08, 0x50, 0x90, 0x1a0, signed - 1} {
		report := bytes.Clone(testdata.AttestationBytes)
		report[off] ^= 0x01
		_, err := verifySNPSample(t, report, snpTestPolicy(true))
		if ClassOf(err) != ClassBadSignature {
			t.Errorf("flipped byte at %#x: %v, want bad_signature", off, err)
		}
	}
}

func TestSNPUntrustedRoot(t *testing.T) {
	amd := pkix.Name{Country: []string{"US"}, Locality: []string{"Santa Clara"}, Province: []string{"CA"},
		Organization: []string{"Advanced Micro Devices"}, OrganizationalUnit: []string{"Engineering"}}
	arkName, askName := amd, amd
	arkName.CommonName, askName.CommonName = "ARK-Milan", "SEV-Milan"
	ark, arkKey := selfSignedCA(t, arkName)
	ask := intermediateCA(t, askName, ark, arkKey)
	r := trust.AMDRootCertsProduct("Milan")
	r.ProductCerts = &trust.ProductCerts{Ark: ark, Ask: ask}

	p := snpTestPolicy(true)
	p.SNP.Roots = map[string][]*trust.AMDRootCerts{"Milan": {r}}
	_, err := verifySNPSample(t, testdata.AttestationBytes, p)
	wantClass(t, err, ClassUntrustedRoot)

	// No roots at all for the product line is also untrusted.
	p.SNP.Roots = map[string][]*trust.AMDRootCerts{"Genoa": {r}}
	_, err = verifySNPSample(t, testdata.AttestationBytes, p)
	wantClass(t, err, ClassUntrustedRoot)
}

func TestSNPMeasurementAllowList(t *testing.T) {
	p := snpTestPolicy(true)
	other := bytes.Repeat([]byte{0xab}, MeasurementSize)
	p.SNP.Measurements = [][]byte{other}
	_, err := verifySNPSample(t, testdata.AttestationBytes, p)
	wantClass(t, err, ClassMeasurementNotAllowed)

	p.SNP.Measurements = [][]byte{other, unhex(t, snpSampleMeasurement)}
	v, err := verifySNPSample(t, testdata.AttestationBytes, p)
	if err != nil || !v.MeasurementChecked {
		t.Fatalf("allowed measurement: %v %+v", err, v)
	}
}

func TestSNPMinimumTCB(t *testing.T) {
	p := snpTestPolicy(true)
	p.SNP.MinTCB = SNPTCB{Bootloader: 2, SNP: 5, Microcode: 68}
	if _, err := verifySNPSample(t, testdata.AttestationBytes, p); err != nil {
		t.Fatalf("TCB equal to the minimum: %v", err)
	}
	p.SNP.MinTCB.Microcode = 69
	_, err := verifySNPSample(t, testdata.AttestationBytes, p)
	wantClass(t, err, ClassTCBTooLow)
}

func TestSNPEndorsementProblems(t *testing.T) {
	p := snpTestPolicy(true)
	_, err := VerifyEvidence(KindSEVSNP, testdata.AttestationBytes, nil, p, snpNow)
	wantClass(t, err, ClassCollateralInvalid)
	_, err = VerifyEvidence(KindSEVSNP, testdata.AttestationBytes, [][]byte{[]byte("not a certificate")}, p, snpNow)
	wantClass(t, err, ClassCollateralInvalid)
	// The VCEK has expired by 2030.
	_, err = VerifyEvidence(KindSEVSNP, testdata.AttestationBytes, [][]byte{testdata.VcekBytes}, p, time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	wantClass(t, err, ClassCollateralInvalid)
	_, err = VerifyEvidence(KindSEVSNP, testdata.AttestationBytes[:100], [][]byte{testdata.VcekBytes}, p, snpNow)
	wantClass(t, err, ClassMalformed)
}

func TestSNPKindNotAccepted(t *testing.T) {
	_, err := VerifyEvidence(KindSEVSNP, testdata.AttestationBytes, [][]byte{testdata.VcekBytes}, DefaultPolicy(KindTDX), snpNow)
	wantClass(t, err, ClassUnsupportedKind)
}

// TestZeroTimeRefused: a zero time is refused before any library sees it. crypto/x509 and
// go-sev-guest would read the clock instead, and the verdict would depend on the verifier.
func TestZeroTimeRefused(t *testing.T) {
	_, err := VerifyEvidence(KindSEVSNP, testdata.AttestationBytes, [][]byte{testdata.VcekBytes}, snpTestPolicy(true), time.Time{})
	if !errors.Is(err, ErrZeroTime) || ClassOf(err) != ClassCollateralInvalid {
		t.Fatalf("SEV-SNP at the zero time: %v, want ErrZeroTime", err)
	}
	root := testKey(1)
	b := simBundle(t, root, 7)
	if _, err := Verify(b, simPolicy(root), seedFor(b), 7, time.Time{}); !errors.Is(err, ErrZeroTime) {
		t.Fatalf("bundle at the zero time: %v, want ErrZeroTime", err)
	}
}
