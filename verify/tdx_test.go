package verify

import (
	"bytes"
	"crypto/x509"
	"crypto/x509/pkix"
	"net/url"
	"testing"
	"time"

	"github.com/google/go-tdx-guest/abi"
	"github.com/google/go-tdx-guest/pcs"
	pb "github.com/google/go-tdx-guest/proto/tdx"
	tdxtest "github.com/google/go-tdx-guest/testing"
	"github.com/google/go-tdx-guest/testing/testdata"
)

// tdxQuote is the go-tdx-guest sample quote without the bytes the sample carries after
// its signed data.
var tdxQuote = func() []byte {
	q, err := TrimTDXQuote(testdata.RawQuote)
	if err != nil {
		panic(err)
	}
	return q
}()

// tdxNow is inside the validity of the sample quote's PCK chain and of the sample
// collateral (TCB info until 2023-07-18, QE identity until 2023-07-08).
var tdxNow = time.Date(2023, 7, 1, 1, 0, 0, 0, time.UTC)

func tdxSampleBody(t *testing.T) *pb.TDQuoteBody {
	t.Helper()
	q, err := abi.QuoteToProto(tdxQuote)
	if err != nil {
		t.Fatal(err)
	}
	return q.(*pb.QuoteV4).GetTdQuoteBody()
}

func tdxTestPolicy(allowDebug bool) *Policy {
	p := DefaultPolicy(KindTDX)
	p.TDX.AllowDebug = allowDebug
	return p
}

// sampleCollateral is the go-tdx-guest sample PCS responses, with the issuer chains the
// sample responses came with (stored URL-encoded, as in the PCS response header).
func sampleCollateral(t *testing.T) *TDXCollateral {
	t.Helper()
	chain := func(h map[string][]string, key string) []byte {
		s, err := url.QueryUnescape(h[key][0])
		if err != nil {
			t.Fatal(err)
		}
		return []byte(s)
	}
	return &TDXCollateral{
		TCBInfo:         testdata.TcbInfoBody,
		TCBInfoChain:    chain(tdxtest.TcbInfoHeader, pcs.TcbInfoIssuerChainPhrase),
		QEIdentity:      testdata.QeIdentityBody,
		QEIdentityChain: chain(tdxtest.QeIdentityHeader, pcs.SgxQeIdentityIssuerChainPhrase),
	}
}

const tdxSampleMRTD = "6363b8043668a3ad953278e10389574d326c6749fb78aa810ecd9336923db86f22fc00b8dcd404bc10d5e119d7215cbb"

func TestTDXGenuineVerifies(t *testing.T) {
	v, err := VerifyEvidence(KindTDX, tdxQuote, nil, DefaultPolicy(KindTDX), tdxNow)
	if err != nil {
		t.Fatalf("genuine quote: %v", err)
	}
	if v.Kind != KindTDX || hexOf(v.Measurement) != tdxSampleMRTD || v.MeasurementChecked || v.Debug || len(v.ReportData) != 64 {
		t.Fatalf("verdict %+v", v)
	}
	// The v5 sample (TDX 1.5) is signed by a newer PCK certificate.
	if _, err := VerifyEvidence(KindTDX, mustTrim(t, testdata.RawQuoteV5), nil, DefaultPolicy(KindTDX), time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatalf("genuine v5 quote: %v", err)
	}
}

func TestTDXFlippedByteIsBadSignature(t *testing.T) {
	// Offsets across the signed header (48 bytes) and TD quote body (584 bytes): header
	// user data, TEE TCB SVN, MRTD, RTMR0, report data, last body byte.
	for _, off := range []int{0x1e, 0x30, 0xb8, 0x1c8, 0x238, 0x277} {
		q := bytes.Clone(tdxQuote)
		q[off] ^= 0x01
		_, err := VerifyEvidence(KindTDX, q, nil, tdxTestPolicy(true), tdxNow)
		if ClassOf(err) != ClassBadSignature {
			t.Errorf("flipped byte at %#x: %v, want bad_signature", off, err)
		}
	}
}

func TestTDXUntrustedRoot(t *testing.T) {
	name := pkix.Name{CommonName: "Intel SGX Root CA", Organization: []string{"Intel Corporation"},
		Locality: []string{"Santa Clara"}, Province: []string{"CA"}, Country: []string{"US"}}
	root, _ := selfSignedCA(t, name)
	p := tdxTestPolicy(true)
	p.TDX.Roots = x509.NewCertPool()
	p.TDX.Roots.AddCert(root)
	_, err := VerifyEvidence(KindTDX, tdxQuote, nil, p, tdxNow)
	wantClass(t, err, ClassUntrustedRoot)
}

func TestTDXMeasurementAllowList(t *testing.T) {
	other := bytes.Repeat([]byte{0xcd}, MeasurementSize)
	p := tdxTestPolicy(true)
	p.TDX.MRTDs = [][]byte{other}
	_, err := VerifyEvidence(KindTDX, tdxQuote, nil, p, tdxNow)
	wantClass(t, err, ClassMeasurementNotAllowed)

	p.TDX.MRTDs = [][]byte{unhex(t, tdxSampleMRTD)}
	v, err := VerifyEvidence(KindTDX, tdxQuote, nil, p, tdxNow)
	if err != nil || !v.MeasurementChecked {
		t.Fatalf("allowed MRTD: %v %+v", err, v)
	}
	// An RTMR allow-list that does not hold the quote's RTMR2.
	p.TDX.RTMRs[2] = [][]byte{other}
	_, err = VerifyEvidence(KindTDX, tdxQuote, nil, p, tdxNow)
	wantClass(t, err, ClassMeasurementNotAllowed)
	p.TDX.RTMRs[2] = [][]byte{tdxSampleBody(t).GetRtmrs()[2]}
	if _, err := VerifyEvidence(KindTDX, tdxQuote, nil, p, tdxNow); err != nil {
		t.Fatalf("allowed RTMR2: %v", err)
	}
}

func TestTDXMinimumTeeTCBSVN(t *testing.T) {
	p := tdxTestPolicy(true)
	p.TDX.MinTeeTCBSVN = tdxSampleBody(t).GetTeeTcbSvn()
	if _, err := VerifyEvidence(KindTDX, tdxQuote, nil, p, tdxNow); err != nil {
		t.Fatalf("SVN equal to the minimum: %v", err)
	}
	p.TDX.MinTeeTCBSVN = bytes.Clone(p.TDX.MinTeeTCBSVN)
	p.TDX.MinTeeTCBSVN[0]++
	_, err := VerifyEvidence(KindTDX, tdxQuote, nil, p, tdxNow)
	wantClass(t, err, ClassTCBTooLow)
}

// The sample quote carries no DEBUG attribute and its signature covers the attributes, so
// the debug rule is checked on a modified body past the signature checks.
func TestTDXPolicyRefusesDebug(t *testing.T) {
	body := tdxSampleBody(t)
	body.TdAttributes = bytes.Clone(body.GetTdAttributes())
	body.TdAttributes[0] |= tdDebugBit
	_, err := tdxPolicy(body, &TDXPolicy{})
	wantClass(t, err, ClassDebugEnabled)
	v, err := tdxPolicy(body, &TDXPolicy{AllowDebug: true})
	if err != nil || !v.Debug {
		t.Fatalf("debug allowed: %v %+v", err, v)
	}
}

func TestTDXCollateralFromMemory(t *testing.T) {
	p := tdxTestPolicy(true)
	p.TDX.Collateral = sampleCollateral(t)
	// The sample TCB info lists newer TCB levels than the sample quote's platform has (the
	// library's own tests zero the SVNs to pass), so Intel's status check refuses it.
	_, err := VerifyEvidence(KindTDX, tdxQuote, nil, p, tdxNow)
	wantClass(t, err, ClassTCBTooLow)

	// Past the TCB info's nextUpdate (2023-07-18) the collateral has expired.
	_, err = VerifyEvidence(KindTDX, tdxQuote, nil, p, time.Date(2023, 8, 1, 0, 0, 0, 0, time.UTC))
	wantClass(t, err, ClassCollateralInvalid)

	// A changed TCB info body no longer matches Intel's signature over it.
	tampered := *p.TDX.Collateral
	tampered.TCBInfo = bytes.Replace(bytes.Clone(tampered.TCBInfo), []byte(`"tcbEvaluationDataNumber":`), []byte(`"tcbEvaluationDataNumber": `), 1)
	if bytes.Equal(tampered.TCBInfo, p.TDX.Collateral.TCBInfo) {
		t.Fatal("tampering did not change the TCB info")
	}
	p.TDX.Collateral = &tampered
	_, err = VerifyEvidence(KindTDX, tdxQuote, nil, p, tdxNow)
	wantClass(t, err, ClassCollateralInvalid)

	p.TDX.Collateral = &TDXCollateral{TCBInfo: testdata.TcbInfoBody}
	_, err = VerifyEvidence(KindTDX, tdxQuote, nil, p, tdxNow)
	wantClass(t, err, ClassCollateralInvalid)
}

func TestTDXMalformed(t *testing.T) {
	_, err := VerifyEvidence(KindTDX, tdxQuote[:300], nil, tdxTestPolicy(true), tdxNow)
	wantClass(t, err, ClassMalformed)
	_, err = VerifyEvidence(KindTDX, make([]byte, maxQuoteSize+1), nil, tdxTestPolicy(true), tdxNow)
	wantClass(t, err, ClassMalformed)
}

func TestPercentEncodeRoundTrips(t *testing.T) {
	in := []byte("-----BEGIN CERTIFICATE-----\nab+/=\x00\xff~._-\n")
	out, err := url.QueryUnescape(percentEncode(in))
	if err != nil || out != string(in) {
		t.Fatalf("%q %v", out, err)
	}
}

func mustTrim(t *testing.T, raw []byte) []byte {
	t.Helper()
	q, err := TrimTDXQuote(raw)
	if err != nil {
		t.Fatal(err)
	}
	return q
}
