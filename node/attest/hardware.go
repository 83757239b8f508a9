package attest

import (
	"context"
	"errors"
	"fmt"

	sevabi "github.com/google/go-sev-guest/abi"
	sevclient "github.com/google/go-sev-guest/client"
	tdxclient "github.com/google/go-tdx-guest/client"

	"github.com/lowband/lowband/verify"
)

// snpProducer asks the kernel for SEV-SNP reports through configfs-tsm (or the sev-guest
// device when configfs-tsm is absent).
type snpProducer struct {
	qp sevclient.QuoteProvider
}

func newSNPProducer() (Producer, error) {
	qp, err := sevclient.GetQuoteProvider()
	if err != nil {
		return nil, fmt.Errorf("sev-snp producer: %w (is this an SEV-SNP guest with configfs-tsm?)", err)
	}
	return &snpProducer{qp: qp}, nil
}

func (*snpProducer) Kind() verify.Kind { return verify.KindSEVSNP }

// Evidence returns the raw report and the endorsement key certificate from the host's
// certificate table. Verifiers work offline, so a report without its VCEK or VLEK is an
// error here rather than a bundle nobody can verify.
func (p *snpProducer) Evidence(ctx context.Context, reportData [64]byte) ([]byte, [][]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	raw, err := p.qp.GetRawQuote(reportData)
	if err != nil {
		return nil, nil, fmt.Errorf("getting SEV-SNP report: %w", err)
	}
	if len(raw) < sevabi.ReportSize {
		return nil, nil, fmt.Errorf("SEV-SNP report is %d bytes, want at least %d", len(raw), sevabi.ReportSize)
	}
	att, err := sevabi.ReportCertsToProto(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("parsing SEV-SNP report and certificates: %w", err)
	}
	ek := att.GetCertificateChain().GetVcekCert()
	if len(ek) == 0 {
		ek = att.GetCertificateChain().GetVlekCert()
	}
	if len(ek) == 0 {
		return nil, nil, errors.New("the host provided no VCEK or VLEK certificate with the SEV-SNP report")
	}
	return raw[:sevabi.ReportSize], [][]byte{ek}, nil
}

// tdxProducer asks the kernel for TDX quotes through configfs-tsm.
type tdxProducer struct {
	qp any
}

func newTDXProducer() (Producer, error) {
	qp, err := tdxclient.GetQuoteProvider()
	if err != nil {
		return nil, fmt.Errorf("tdx producer: %w", err)
	}
	if err := qp.IsSupported(); err != nil {
		return nil, fmt.Errorf("tdx producer: %w (is this a TDX guest with configfs-tsm?)", err)
	}
	return &tdxProducer{qp: qp}, nil
}

func (*tdxProducer) Kind() verify.Kind { return verify.KindTDX }

// Evidence returns the quote (trimmed: see verify.TrimTDXQuote); its PCK chain is inside it.
func (p *tdxProducer) Evidence(ctx context.Context, reportData [64]byte) ([]byte, [][]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	quote, err := tdxclient.GetRawQuote(p.qp, reportData)
	if err != nil {
		return nil, nil, fmt.Errorf("getting TDX quote: %w", err)
	}
	// Verifiers accept a quote only without the bytes some providers leave after it.
	quote, err = verify.TrimTDXQuote(quote)
	if err != nil {
		return nil, nil, fmt.Errorf("TDX quote: %w", err)
	}
	return quote, nil, nil
}
