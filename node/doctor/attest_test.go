package doctor

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/lowband/lowband/configs"
)

// fakeMachine makes the paths of a machine under a temporary root; those named in
// present exist (the configfs-tsm one as a directory, devices as files).
func fakeMachine(t *testing.T, present ...string) Machine {
	t.Helper()
	root := t.TempDir()
	m := Machine{
		TSMReport: filepath.Join(root, "tsm", "report"),
		SEVGuest:  filepath.Join(root, "sev-guest"),
		TDXGuest:  filepath.Join(root, "tdx_guest"),
	}
	for _, p := range present {
		var err error
		switch p {
		case "tsm":
			err = os.MkdirAll(m.TSMReport, 0o755)
		case "sev":
			err = os.WriteFile(m.SEVGuest, nil, 0o600)
		case "tdx":
			err = os.WriteFile(m.TDXGuest, nil, 0o600)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return m
}

func TestAttestationSim(t *testing.T) {
	c, s := loaded(t, newHome(t))
	want(t, "sim on a sim network", Attestation(c, s, fakeMachine(t)), Warn, "INSECURE", "SEV-SNP or TDX")

	c.Profile = configs.ProfilePublic
	want(t, "sim network under the public profile", Attestation(c, s, fakeMachine(t)), Fail, "refuses", "attest.producer")

	c.Profile = configs.ProfileLocal
	s.Attest.Kinds, s.Attest.AllowSim = []string{configs.KindSEVSNP}, false
	want(t, "sim on a hardware-only network", Attestation(c, s, fakeMachine(t)), Fail, "does not allow simulated", "[sev-snp]")

	c.Role = configs.RoleBootstrap
	want(t, "bootstrap role", Attestation(c, s, fakeMachine(t)), OK, "no attestation")
}

func TestAttestationHardware(t *testing.T) {
	c, s := loaded(t, newHome(t))
	s.Attest.Kinds, s.Attest.AllowSim = []string{configs.KindSEVSNP, configs.KindTDX}, false

	c.Attest.Producer = configs.KindSEVSNP
	m := fakeMachine(t, "tsm")
	want(t, "snp with configfs-tsm", Attestation(c, s, m), OK, "configfs-tsm present at "+m.TSMReport)
	want(t, "snp with the sev-guest device only", Attestation(c, s, fakeMachine(t, "sev")), OK, "sev-guest")
	want(t, "snp on a plain machine", Attestation(c, s, fakeMachine(t, "tdx")), Fail, "not a SEV-SNP guest", "configfs")

	c.Attest.Producer = configs.KindTDX
	want(t, "tdx with configfs-tsm", Attestation(c, s, fakeMachine(t, "tsm")), OK, "producer TDX")
	want(t, "tdx on a plain machine", Attestation(c, s, fakeMachine(t, "sev")), Fail, "not a TDX guest")

	s.Attest.Kinds = []string{configs.KindSEVSNP}
	want(t, "tdx on an snp-only network", Attestation(c, s, fakeMachine(t, "tsm")), Fail, "does not accept", "attest.producer")
}

func TestAttestationConfigfsNotWritable(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root may write anywhere")
	}
	c, s := loaded(t, newHome(t))
	s.Attest.Kinds, s.Attest.AllowSim = []string{configs.KindSEVSNP}, false
	c.Attest.Producer = configs.KindSEVSNP
	m := fakeMachine(t, "tsm")
	if err := os.Chmod(m.TSMReport, 0o555); err != nil {
		t.Fatal(err)
	}
	want(t, "configfs-tsm read-only for this user", Attestation(c, s, m), Fail, "not writable", "contrib/systemd")
}
