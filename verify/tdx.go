package verify

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/google/go-tdx-guest/abi"
	"github.com/google/go-tdx-guest/pcs"
	pb "github.com/google/go-tdx-guest/proto/tdx"
	tdxverify "github.com/google/go-tdx-guest/verify"
)

// maxQuoteSize bounds a TDX quote (a v4 quote with its PCK chain is about 5 KiB).
const maxQuoteSize = 32 << 10

// tdDebugBit is bit 0 of TD_ATTRIBUTES (TUD.DEBUG).
const tdDebugBit = 0x01

// tdxBody is what the policy reads from a v4 or v5 TD quote body.
type tdxBody interface {
	GetTdAttributes() []byte
	GetMrTd() []byte
	GetRtmrs() [][]byte
	GetTeeTcbSvn() []byte
	GetReportData() []byte
}

// verifyTDX checks a TDX quote: the quote signature by its attestation key, then with
// go-tdx-guest the PCK chain against the pinned Intel root, the QE report and optionally the
// collateral (TCB info and QE identity, served from memory: nothing is fetched), then the
// policy.
func verifyTDX(evidence []byte, p *TDXPolicy, now time.Time) (*Verdict, error) {
	if len(evidence) > maxQuoteSize {
		return nil, errorf(ClassMalformed, nil, "TDX quote is %d bytes, limit %d", len(evidence), maxQuoteSize)
	}
	quote, err := abi.QuoteToProto(evidence)
	if err != nil {
		return nil, errorf(ClassMalformed, err, "parsing TDX quote")
	}
	if err := abi.CheckQuote(quote); err != nil {
		return nil, errorf(ClassMalformed, err, "checking TDX quote")
	}
	// One quote, one encoding: no bytes after the signed data its header declares, and the
	// parsed quote re-encodes to exactly the evidence.
	if q, ok := quote.(interface{ GetExtraBytes() []byte }); !ok || len(q.GetExtraBytes()) > 0 {
		return nil, errorf(ClassMalformed, nil, "TDX quote has bytes after its signed data")
	}
	if again, err := abi.QuoteToAbiBytes(quote); err != nil || !bytes.Equal(again, evidence) {
		return nil, errorf(ClassMalformed, err, "TDX quote is not in its one encoding")
	}
	body, signed, err := tdxParts(quote)
	if err != nil {
		return nil, err
	}
	if err := tdxQuoteSignature(evidence, quote, signed); err != nil {
		return nil, err
	}
	roots := p.Roots
	if roots == nil {
		roots = intelRoots()
	}
	opts := &tdxverify.Options{
		TrustedRoots: roots,
		Now:          &tdxverify.TimeSet{PckCertChain: now, TcbInfo: now, QeIdentity: now, PckCrl: now, RootCaCrl: now},
	}
	if p.Collateral != nil {
		g, err := newCollateralGetter(p.Collateral)
		if err != nil {
			return nil, err
		}
		opts.GetCollateral, opts.Getter = true, g
	}
	if libErr := tdxverify.TdxQuote(quote, opts); libErr != nil {
		// Tell an unknown root or an expired chain from the library's other refusals.
		if err := tdxChain(quote, roots, now); err != nil {
			return nil, err
		}
		return nil, classifyTDX(libErr, p.Collateral != nil)
	}
	return tdxPolicy(body, p)
}

// TrimTDXQuote returns the quote without the bytes that some quote providers leave after
// its signed data (padding, or anything else): the one form Verify accepts. Producers
// trim before they put a quote in a bundle. Errors are *Error of class malformed.
func TrimTDXQuote(raw []byte) ([]byte, error) {
	if len(raw) > maxQuoteSize {
		return nil, errorf(ClassMalformed, nil, "TDX quote is %d bytes, limit %d", len(raw), maxQuoteSize)
	}
	quote, err := abi.QuoteToProto(raw)
	if err != nil {
		return nil, errorf(ClassMalformed, err, "parsing TDX quote")
	}
	q, ok := quote.(interface{ GetExtraBytes() []byte })
	if !ok {
		return nil, errorf(ClassMalformed, nil, "unsupported TDX quote type %T", quote)
	}
	return bytes.Clone(raw[:len(raw)-len(q.GetExtraBytes())]), nil
}

func tdxParts(quote any) (tdxBody, *pb.Ecdsa256BitQuoteV4AuthData, error) {
	switch q := quote.(type) {
	case *pb.QuoteV4:
		return q.GetTdQuoteBody(), q.GetSignedData(), nil
	case *pb.QuoteV5:
		d := q.GetTdQuoteBodyDescriptor()
		if b := d.GetTdQuoteBodyV5(); b != nil {
			return b, q.GetSignedData(), nil
		}
		return nil, nil, errorf(ClassUnsupportedKind, nil, "TDX quote v5 without a TD 1.5 body")
	default:
		return nil, nil, errorf(ClassMalformed, nil, "unsupported TDX quote type %T", quote)
	}
}

// tdxQuoteSignature checks the attestation key's ECDSA P-256 signature over the raw header
// and TD quote body (their length taken from the parsed quote), so that the evidence is
// exactly what was signed and any change to the signed body is a bad signature. (That key
// is itself certified by the QE report, which the PCK certificate signs; go-tdx-guest
// checks that part.)
func tdxQuoteSignature(raw []byte, quote any, signed *pb.Ecdsa256BitQuoteV4AuthData) error {
	var header *pb.Header
	var bodyBytes []byte
	var err error
	switch q := quote.(type) {
	case *pb.QuoteV4:
		header = q.GetHeader()
		bodyBytes, err = abi.TdQuoteBodyToAbiBytes(q.GetTdQuoteBody())
	case *pb.QuoteV5:
		header = q.GetHeader()
		bodyBytes, err = abi.TdQuoteBodyDescriptorToAbiBytes(q.GetTdQuoteBodyDescriptor())
	}
	if err != nil {
		return errorf(ClassMalformed, err, "encoding TD quote body")
	}
	headerBytes, err := abi.HeaderToAbiBytes(header)
	if err != nil {
		return errorf(ClassMalformed, err, "encoding TD quote header")
	}
	key := signed.GetEcdsaAttestationKey()
	if len(key) != 64 {
		return errorf(ClassMalformed, nil, "attestation key is %d bytes", len(key))
	}
	pub := &ecdsa.PublicKey{Curve: elliptic.P256(), X: new(big.Int).SetBytes(key[:32]), Y: new(big.Int).SetBytes(key[32:])}
	if !pub.Curve.IsOnCurve(pub.X, pub.Y) {
		return errorf(ClassBadSignature, nil, "attestation key is not on P-256")
	}
	der, err := abi.SignatureToDER(signed.GetSignature())
	if err != nil {
		return errorf(ClassBadSignature, err, "decoding TDX quote signature")
	}
	n := len(headerBytes) + len(bodyBytes)
	if n > len(raw) {
		return errorf(ClassMalformed, nil, "TDX quote shorter than its header and body")
	}
	digest := sha256.Sum256(raw[:n])
	if !ecdsa.VerifyASN1(pub, digest[:], der) {
		return errorf(ClassBadSignature, nil, "TDX quote signature does not verify with its attestation key")
	}
	return nil
}

// tdxChain checks the PCK certificate chain in the quote against the pinned roots,
// classifying an unknown root and expiry.
func tdxChain(quote any, roots *x509.CertPool, now time.Time) error {
	chain, err := tdxverify.ExtractChainFromQuote(quote)
	if err != nil {
		return errorf(ClassMalformed, err, "extracting the PCK certificate chain")
	}
	inter := x509.NewCertPool()
	inter.AddCert(chain.IntermediateCertificate)
	_, err = chain.PCKCertificate.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, CurrentTime: now})
	if err == nil {
		return nil
	}
	var inv x509.CertificateInvalidError
	if errors.As(err, &inv) && inv.Reason == x509.Expired {
		return errorf(ClassCollateralInvalid, err, "PCK certificate chain is not valid at %s", now.UTC().Format(time.RFC3339))
	}
	return errorf(ClassUntrustedRoot, err, "PCK certificate does not chain to a pinned Intel root")
}

// classifyTDX maps what go-tdx-guest still refuses after the checks above (which leave the
// QE report, QE binding, collateral and TCB status) to a class. The library's errors are
// strings, so this matches on their wording.
func classifyTDX(err error, withCollateral bool) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "TCB status") || errors.Is(err, tdxverify.ErrTdxTcbStatus) || errors.Is(err, tdxverify.ErrEnclaveTcbStatus):
		return errorf(ClassTCBTooLow, err, "TDX TCB status")
	case withCollateral && (strings.Contains(msg, "collateral") || strings.Contains(msg, "tcbInfo") ||
		strings.Contains(msg, "QeIdentity") || strings.Contains(msg, "TCB info") ||
		strings.Contains(msg, "expired") || strings.Contains(msg, "QE Identity")):
		return errorf(ClassCollateralInvalid, err, "TDX collateral")
	case strings.Contains(msg, "expired"):
		return errorf(ClassCollateralInvalid, err, "TDX certificate")
	default:
		return errorf(ClassBadSignature, err, "TDX quote")
	}
}

// tdxPolicy applies the network's policy to a quote that verified.
func tdxPolicy(body tdxBody, p *TDXPolicy) (*Verdict, error) {
	checked := len(p.MRTDs) > 0
	if checked && !inAllowList(body.GetMrTd(), p.MRTDs) {
		return nil, errorf(ClassMeasurementNotAllowed, nil, "TDX MRTD %s", hex.EncodeToString(body.GetMrTd()))
	}
	rtmrs := body.GetRtmrs()
	for i, allowed := range p.RTMRs {
		if len(allowed) == 0 {
			continue
		}
		if i >= len(rtmrs) || !inAllowList(rtmrs[i], allowed) {
			return nil, errorf(ClassMeasurementNotAllowed, nil, "TDX RTMR%d not in the allow-list", i)
		}
	}
	attrs := body.GetTdAttributes()
	debug := len(attrs) > 0 && attrs[0]&tdDebugBit != 0
	if debug && !p.AllowDebug {
		return nil, errorf(ClassDebugEnabled, nil, "TD attributes have DEBUG set")
	}
	svn := body.GetTeeTcbSvn()
	if p.MinTeeTCBSVN != nil {
		if len(p.MinTeeTCBSVN) != len(svn) {
			return nil, errorf(ClassMalformed, nil, "policy minimum TEE TCB SVN is %d bytes, quote has %d", len(p.MinTeeTCBSVN), len(svn))
		}
		for i := range svn {
			if svn[i] < p.MinTeeTCBSVN[i] {
				return nil, errorf(ClassTCBTooLow, nil, "TEE TCB SVN %x is below the minimum %x", svn, p.MinTeeTCBSVN)
			}
		}
	}
	return &Verdict{
		Kind:               KindTDX,
		Measurement:        body.GetMrTd(),
		ReportData:         body.GetReportData(),
		MeasurementChecked: checked,
		Debug:              debug,
		TCB:                "tee_tcb_svn=" + hex.EncodeToString(svn),
	}, nil
}

// collateralGetter serves the two PCS responses the library asks for from memory, so that
// collateral checks never touch the network. Any other URL is an error.
type collateralGetter struct {
	tcbHeader, qeHeader map[string][]string
	tcbInfo, qeIdentity []byte
}

func newCollateralGetter(c *TDXCollateral) (*collateralGetter, error) {
	if len(c.TCBInfo) == 0 || len(c.QEIdentity) == 0 || len(c.TCBInfoChain) == 0 || len(c.QEIdentityChain) == 0 {
		return nil, errorf(ClassCollateralInvalid, nil, "TDX collateral needs TCB info, QE identity and both issuer chains")
	}
	// The library reads the issuer chain from a URL-encoded response header.
	return &collateralGetter{
		tcbHeader:  map[string][]string{pcs.TcbInfoIssuerChainPhrase: {percentEncode(c.TCBInfoChain)}},
		qeHeader:   map[string][]string{pcs.SgxQeIdentityIssuerChainPhrase: {percentEncode(c.QEIdentityChain)}},
		tcbInfo:    c.TCBInfo,
		qeIdentity: c.QEIdentity,
	}, nil
}

// Get implements the library's HTTPSGetter without any network access.
func (g *collateralGetter) Get(u string) (map[string][]string, []byte, error) {
	switch {
	case u == pcs.QeIdentityURL():
		return g.qeHeader, g.qeIdentity, nil
	case strings.HasPrefix(u, pcs.TcbInfoURL("")):
		return g.tcbHeader, g.tcbInfo, nil
	}
	return nil, nil, fmt.Errorf("offline verification: no collateral for %s", u)
}

// percentEncode escapes every byte but letters, digits and "-._~" as %XX, the form of the
// PCS issuer-chain header that go-tdx-guest unescapes.
func percentEncode(b []byte) string {
	const hexDigits = "0123456789ABCDEF"
	var sb strings.Builder
	for _, c := range b {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '.', c == '_', c == '~':
			sb.WriteByte(c)
		default:
			sb.WriteByte('%')
			sb.WriteByte(hexDigits[c>>4])
			sb.WriteByte(hexDigits[c&15])
		}
	}
	return sb.String()
}
