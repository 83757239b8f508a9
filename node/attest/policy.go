package attest

import (
	"encoding/hex"
	"fmt"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/verify"
)

// PolicyFromSpec turns a validated attestation spec into the policy package verify applies.
// network and run, when set, pin the bundles' network and run (use the spec's NetworkID and
// Run). TDX collateral is not part of the spec; set Policy.TDX.Collateral separately.
func PolicyFromSpec(a configs.AttestSpec, network, run string) (*verify.Policy, error) {
	p := &verify.Policy{Network: network, Run: run, AllowSim: a.AllowsSim(), MaxAgeEpochs: a.MaxAgeEpochs}
	for _, k := range a.Kinds {
		if k == configs.KindSEVSNP || k == configs.KindTDX {
			p.Kinds = append(p.Kinds, verify.Kind(k))
		}
	}
	var err error
	lists := []struct {
		key  string
		src  []string
		dst  *[][]byte
		size int
	}{
		{"sim_roots", a.SimRoots, &p.SimRoots, 32},
		{"sim_measurements", a.SimMeasurements, &p.SimMeasurements, verify.MeasurementSize},
		{"snp.measurements", a.SNP.Measurements, &p.SNP.Measurements, verify.MeasurementSize},
		{"tdx.mrtds", a.TDX.MRTDs, &p.TDX.MRTDs, verify.MeasurementSize},
		{"tdx.rtmr0", a.TDX.RTMR0, &p.TDX.RTMRs[0], verify.MeasurementSize},
		{"tdx.rtmr1", a.TDX.RTMR1, &p.TDX.RTMRs[1], verify.MeasurementSize},
		{"tdx.rtmr2", a.TDX.RTMR2, &p.TDX.RTMRs[2], verify.MeasurementSize},
		{"tdx.rtmr3", a.TDX.RTMR3, &p.TDX.RTMRs[3], verify.MeasurementSize},
	}
	for _, l := range lists {
		if *l.dst, err = decodeList(l.src, l.size); err != nil {
			return nil, fmt.Errorf("attest.%s: %w", l.key, err)
		}
	}
	p.SNP.MaxVMPL = a.SNP.MaxVMPL
	p.SNP.AllowDebug = a.SNP.AllowDebug
	p.SNP.MinTCB = verify.SNPTCB{Bootloader: a.SNP.MinTCB.Bootloader, TEE: a.SNP.MinTCB.TEE, SNP: a.SNP.MinTCB.SNP, Microcode: a.SNP.MinTCB.Microcode}
	p.TDX.AllowDebug = a.TDX.AllowDebug
	if a.TDX.MinTeeTCBSVN != "" {
		if p.TDX.MinTeeTCBSVN, err = hex.DecodeString(a.TDX.MinTeeTCBSVN); err != nil {
			return nil, fmt.Errorf("attest.tdx.min_tee_tcb_svn: %w", err)
		}
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("attest.tdx: %w", err)
	}
	return p, nil
}

func decodeList(list []string, size int) ([][]byte, error) {
	out, err := configs.DecodeHexList(list)
	if err != nil {
		return nil, err
	}
	for i, b := range out {
		if len(b) != size {
			return nil, fmt.Errorf("entry %d is %d bytes, want %d", i, len(b), size)
		}
	}
	return out, nil
}
