package configs

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

const specHead = "version = 1\nname = \"testnet\"\nrun = \"r1\"\n"

func TestAttestSpecDefaults(t *testing.T) {
	s, err := ParseSpec("spec", []byte(specHead))
	if err != nil {
		t.Fatal(err)
	}
	a := s.Attest
	if !slices.Equal(a.Kinds, []string{KindSEVSNP, KindTDX}) || a.AllowsSim() || len(a.SimRoots) != 0 || a.EpochRounds != 100 {
		t.Fatalf("defaults %+v", a)
	}
}

func TestAttestSpecSimOptIn(t *testing.T) {
	byKind, err := ParseSpec("spec", []byte(specHead+"[attest]\nkinds = [\"sim\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	byFlag, err := ParseSpec("spec", []byte(specHead+"[attest]\nallow_sim = true\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []*Spec{byKind, byFlag} {
		if !s.Attest.AllowSim || !slices.Equal(s.Attest.Kinds, []string{KindSim}) || !slices.Equal(s.Attest.SimRoots, []string{DevnetSimRoot()}) {
			t.Fatalf("sim opt-in %+v", s.Attest)
		}
	}
	if byKind.Hash() != byFlag.Hash() {
		t.Fatal("the two spellings of the sim opt-in give different networks")
	}
	root := strings.Repeat("AB", 32)
	s, err := ParseSpec("spec", []byte(specHead+"[attest]\nkinds = [\"sev-snp\", \"sim\"]\nsim_roots = [\""+root+"\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Attest.SimRoots, []string{strings.ToLower(root)}) {
		t.Fatalf("sim roots %v", s.Attest.SimRoots)
	}
}

func TestAttestSpecErrors(t *testing.T) {
	m48 := strings.Repeat("00", 48)
	for _, tc := range []struct{ body, key string }{
		{"kinds = [\"sgx\"]\n", "attest.kinds[0]"},
		{"kinds = [\"tdx\", \"tdx\"]\n", "attest.kinds[1]"},
		{"sim_roots = [\"" + strings.Repeat("00", 32) + "\"]\n", "attest.sim_roots"},
		{"kinds = [\"sim\"]\nsim_roots = [\"zz\"]\n", "attest.sim_roots[0]"},
		{"sim_measurements = [\"" + m48[2:] + "\"]\n", "attest.sim_measurements[0]"},
		{"epoch_rounds = 2000000\n", "attest.epoch_rounds"},
		{"[attest.snp]\nmeasurements = [\"" + m48 + "\", \"" + m48 + "\"]\n", "attest.snp.measurements[1]"},
		{"[attest.snp]\nmax_vmpl = 4\n", "attest.snp.max_vmpl"},
		{"[attest.tdx]\nrtmr2 = [\"00\"]\n", "attest.tdx.rtmr2[0]"},
		{"[attest.tdx]\nmin_tee_tcb_svn = \"0300\"\n", "attest.tdx.min_tee_tcb_svn"},
	} {
		body := specHead
		if !strings.HasPrefix(tc.body, "[") {
			body += "[attest]\n"
		}
		_, err := ParseSpec("spec", []byte(body+tc.body))
		var ke *KeyError
		if !errors.As(err, &ke) || ke.Key != tc.key {
			t.Errorf("%q: got %v, want key %s", tc.body, err, tc.key)
		}
	}
}

func TestAttestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		c  AttestConfig
		ok bool
	}{
		{defaultAttestConfig(), true},
		{AttestConfig{Producer: "tdx"}, true},
		{AttestConfig{Producer: "sgx"}, false},
		{AttestConfig{Producer: "sim", SimMeasurement: "00"}, false},
		{AttestConfig{Producer: "sim", SimMeasurement: strings.Repeat("ab", 48)}, true},
	} {
		err := tc.c.validate()
		if (err == nil) != tc.ok {
			t.Errorf("%+v: %v", tc.c, err)
		}
	}
}

func TestParseAttestSpec(t *testing.T) {
	a, err := ParseAttestSpec("policy", []byte("kinds = [\"sev-snp\"]\n[snp]\nmax_vmpl = 1\n"))
	if err != nil || !slices.Equal(a.Kinds, []string{KindSEVSNP}) || a.SNP.MaxVMPL != 1 {
		t.Fatalf("%+v %v", a, err)
	}
	_, err = ParseAttestSpec("policy", []byte("kinds = [\"sev-snp\"]\ncolour = 1\n"))
	var ke *KeyError
	if !errors.As(err, &ke) || ke.Key != "colour" || ke.Line != 2 {
		t.Fatalf("unknown key: %v", err)
	}
	_, err = ParseAttestSpec("policy", []byte("\n[snp]\nmax_vmpl = 9\n"))
	if !errors.As(err, &ke) || ke.Key != "snp.max_vmpl" || ke.Line != 3 {
		t.Fatalf("bad value: %v", err)
	}
}

// TestTDXMRTDWithoutRTMRsRefused: an MRTD allow-list measures only the TD's firmware; without
// allow-lists for RTMR0-2 (firmware configuration, kernel, command line and initrd) it would
// admit any application on that firmware, so such a spec is refused at the key that is missing.
func TestTDXMRTDWithoutRTMRsRefused(t *testing.T) {
	m := "\"" + strings.Repeat("ab", 48) + "\""
	_, err := ParseAttestSpec("policy", []byte("[tdx]\nmrtds = ["+m+"]\nrtmr0 = ["+m+"]\n"))
	var ke *KeyError
	if !errors.As(err, &ke) || ke.Key != "tdx.rtmr1" {
		t.Fatalf("MRTDs without RTMR1: %v, want an error at tdx.rtmr1", err)
	}
	if _, err := ParseAttestSpec("policy", []byte("[tdx]\nmrtds = ["+m+"]\nrtmr0 = ["+m+"]\nrtmr1 = ["+m+"]\nrtmr2 = ["+m+"]\n")); err != nil {
		t.Fatalf("MRTDs with RTMR0-2: %v", err)
	}
}
