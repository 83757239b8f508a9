package verify

import (
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/google/go-sev-guest/abi"
	"github.com/google/go-sev-guest/kds"
	spb "github.com/google/go-sev-guest/proto/sevsnp"
	"github.com/google/go-sev-guest/validate"
	sevverify "github.com/google/go-sev-guest/verify"
	"github.com/google/go-sev-guest/verify/trust"
)

// maxCertSize bounds one DER endorsement certificate.
const maxCertSize = 8 << 10

// verifySNP checks an SEV-SNP report: its signature by the VCEK/VLEK in endorsements[0],
// then with go-sev-guest that certificate's chain to the pinned AMD roots and product, then
// the policy.
// It uses exactly one endorsement (VerifyEvidence refuses more): the roots are pinned.
func verifySNP(evidence []byte, endorsements [][]byte, p *SNPPolicy, now time.Time) (*Verdict, error) {
	if len(evidence) != abi.ReportSize {
		return nil, errorf(ClassMalformed, nil, "SEV-SNP report is %d bytes, want %d", len(evidence), abi.ReportSize)
	}
	if len(endorsements) == 0 || len(endorsements[0]) == 0 || len(endorsements[0]) > maxCertSize {
		return nil, errorf(ClassCollateralInvalid, nil, "no VCEK or VLEK certificate in the endorsements")
	}
	ek, err := x509.ParseCertificate(endorsements[0])
	if err != nil {
		return nil, errorf(ClassCollateralInvalid, err, "parsing the VCEK/VLEK certificate")
	}
	// The signature is checked on the raw bytes first, so that the evidence is exactly what
	// was signed, and any change to the signed body is a bad signature (even one that also
	// breaks parsing). go-sev-guest checks it again on its parsed form.
	if err := snpSignature(evidence, ek); err != nil {
		return nil, err
	}
	att, err := snpAttestation(evidence, endorsements[0])
	if err != nil {
		return nil, err
	}
	if err := snpChain(att, ek, p, now); err != nil {
		return nil, err
	}
	return snpPolicy(att, p)
}

// snpAttestation parses the report and puts the endorsement key certificate where the
// report's signer info says it belongs.
func snpAttestation(evidence, ekDER []byte) (*spb.Attestation, error) {
	report, err := abi.ReportToProto(evidence)
	if err != nil {
		return nil, errorf(ClassMalformed, err, "parsing SEV-SNP report")
	}
	info, err := abi.ParseSignerInfo(report.GetSignerInfo())
	if err != nil {
		return nil, errorf(ClassMalformed, err, "parsing SEV-SNP signer info")
	}
	att := &spb.Attestation{Report: report, CertificateChain: &spb.CertificateChain{}}
	switch info.SigningKey {
	case abi.VcekReportSigner:
		att.CertificateChain.VcekCert = ekDER
	case abi.VlekReportSigner:
		att.CertificateChain.VlekCert = ekDER
	default:
		return nil, errorf(ClassUnsupportedKind, nil, "SEV-SNP report signed by %v", info.SigningKey)
	}
	return att, nil
}

// snpSignature checks the report's ECDSA P-384 signature over its signed component, on the
// raw bytes, so that any change to the signed body is a bad signature.
func snpSignature(raw []byte, ek *x509.Certificate) error {
	if abi.SignatureAlgo(raw) != abi.SignEcdsaP384Sha384 {
		return errorf(ClassBadSignature, nil, "unknown SEV-SNP signature algorithm %d", abi.SignatureAlgo(raw))
	}
	der, err := abi.ReportToSignatureDER(raw)
	if err != nil {
		return errorf(ClassBadSignature, err, "decoding SEV-SNP report signature")
	}
	if err := ek.CheckSignature(x509.ECDSAWithSHA384, abi.SignedComponent(raw), der); err != nil {
		return errorf(ClassBadSignature, err, "SEV-SNP report signature")
	}
	return nil
}

// snpChain runs go-sev-guest's offline check (KDS extensions, product, chain of the
// endorsement key to the pinned AMD roots, report signature) with certificate fetching
// disabled. When it fails, the chain is checked on its own to tell an unknown root or an
// expired certificate from other endorsement problems.
func snpChain(att *spb.Attestation, ek *x509.Certificate, p *SNPPolicy, now time.Time) error {
	opts := &sevverify.Options{DisableCertFetching: true, Now: now, TrustedRoots: p.Roots}
	libErr := sevverify.SnpAttestation(att, opts)
	if libErr == nil {
		return nil
	}
	info, _ := abi.ParseSignerInfo(att.GetReport().GetSignerInfo()) // parsed before
	line, err := snpProductLine(att.GetReport(), ek, info.SigningKey)
	if err != nil {
		return err
	}
	roots := p.Roots[line]
	if p.Roots == nil {
		r, err := trust.GetDefaultRootCerts(line)
		if err != nil {
			return errorf(ClassUntrustedRoot, err, "no pinned AMD roots for product line %q", line)
		}
		roots = []*trust.AMDRootCerts{r}
	}
	if err := snpRootsVerify(ek, info.SigningKey, roots, now); err != nil {
		return err
	}
	return errorf(ClassCollateralInvalid, libErr, "SEV-SNP endorsement")
}

func snpProductLine(report *spb.Report, ek *x509.Certificate, key abi.ReportSigner) (string, error) {
	if fms := report.GetCpuid1EaxFms(); fms != 0 {
		return kds.ProductLineFromFms(fms), nil
	}
	exts, err := kds.CertificateExtensions(ek, key)
	if err != nil {
		return "", errorf(ClassCollateralInvalid, err, "reading %v certificate extensions", key)
	}
	product, err := kds.ParseProductName(exts.ProductName, key)
	if err != nil {
		return "", errorf(ClassCollateralInvalid, err, "reading %v product name", key)
	}
	return kds.ProductLine(product), nil
}

func snpRootsVerify(ek *x509.Certificate, key abi.ReportSigner, roots []*trust.AMDRootCerts, now time.Time) error {
	var lastErr error
	for _, r := range roots {
		opts := r.X509Options(now, key)
		if opts == nil {
			continue
		}
		_, err := ek.Verify(*opts)
		if err == nil {
			return nil
		}
		var inv x509.CertificateInvalidError
		if errors.As(err, &inv) && inv.Reason == x509.Expired {
			return errorf(ClassCollateralInvalid, err, "%v certificate is not valid at %s", key, now.UTC().Format(time.RFC3339))
		}
		lastErr = err
	}
	return errorf(ClassUntrustedRoot, lastErr, "%v certificate does not chain to a pinned AMD root", key)
}

// snpPolicy applies the network's policy to a report whose chain has verified.
func snpPolicy(att *spb.Attestation, p *SNPPolicy) (*Verdict, error) {
	report := att.GetReport()
	checked := len(p.Measurements) > 0
	if checked && !inAllowList(report.GetMeasurement(), p.Measurements) {
		return nil, errorf(ClassMeasurementNotAllowed, nil, "SEV-SNP measurement %s", hex.EncodeToString(report.GetMeasurement()))
	}
	guest, err := abi.ParseSnpPolicy(report.GetPolicy())
	if err != nil {
		return nil, errorf(ClassMalformed, err, "parsing SEV-SNP guest policy")
	}
	if guest.Debug && !p.AllowDebug {
		return nil, errorf(ClassDebugEnabled, nil, "SEV-SNP guest policy allows debugging")
	}
	if report.GetVmpl() > p.MaxVMPL {
		return nil, errorf(ClassMeasurementNotAllowed, nil, "SEV-SNP report requested from VMPL %d, policy allows at most %d", report.GetVmpl(), p.MaxVMPL)
	}
	reported := kds.DecomposeTCBVersion(kds.TCBVersion(report.GetReportedTcb()))
	minTCB := kds.TCBParts{BlSpl: p.MinTCB.Bootloader, TeeSpl: p.MinTCB.TEE, SnpSpl: p.MinTCB.SNP, UcodeSpl: p.MinTCB.Microcode}
	if !kds.TCBPartsLE(minTCB, reported) {
		return nil, errorf(ClassTCBTooLow, nil, "SEV-SNP reported TCB %s is below the minimum %s", tcbString(reported), tcbString(minTCB))
	}
	// The library's own consistency checks: the VCEK's TCB equals the reported TCB, the chip
	// ID matches, committed <= current. Debug and VMPL were decided above.
	opts := &validate.Options{
		GuestPolicy:               abi.SnpPolicy{SMT: true, Debug: p.AllowDebug, ABIMajor: 0, ABIMinor: 0},
		MinimumTCB:                minTCB,
		PermitProvisionalFirmware: true,
	}
	if err := validate.SnpAttestation(att, opts); err != nil {
		return nil, errorf(ClassCollateralInvalid, err, "SEV-SNP report is inconsistent with its endorsement")
	}
	return &Verdict{
		Kind:               KindSEVSNP,
		Measurement:        report.GetMeasurement(),
		ReportData:         report.GetReportData(),
		MeasurementChecked: checked,
		Debug:              guest.Debug,
		TCB:                tcbString(reported),
	}, nil
}

func tcbString(t kds.TCBParts) string {
	return fmt.Sprintf("bl=%d tee=%d snp=%d ucode=%d", t.BlSpl, t.TeeSpl, t.SnpSpl, t.UcodeSpl)
}
