package doctor

import (
	"fmt"
	"os"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/node/attest"
)

// Machine names where the kernel offers TEE reports. DefaultMachine is Linux's.
type Machine struct {
	TSMReport string // configfs-tsm's report directory (SEV-SNP and TDX)
	SEVGuest  string // the sev-guest device, which go-sev-guest uses without configfs-tsm
	TDXGuest  string // the tdx-guest device
}

// DefaultMachine is where Linux guests have them.
var DefaultMachine = Machine{
	TSMReport: "/sys/kernel/config/tsm/report",
	SEVGuest:  "/dev/sev-guest",
	TDXGuest:  "/dev/tdx_guest",
}

// Attestation checks this node's producer against the network's policy (what the node
// itself refuses to start with) and against this machine: sim is marked insecure, and a
// hardware producer needs configfs-tsm (or the guest device) and write access to it.
func Attestation(c *configs.Config, s *configs.Spec, m Machine) Result {
	const check = "attestation"
	if c.Role == configs.RoleBootstrap {
		return ok(check, "role bootstrap: this node makes no attestation")
	}
	if err := attest.CheckStart(c, s); err != nil {
		return fail(check, err.Error(), fmt.Sprintf("set attest.producer in config.toml to one of the kinds the network accepts (%v)", s.Attest.Kinds))
	}
	switch c.Attest.Producer {
	case configs.KindSim:
		return warn(check, fmt.Sprintf("producer sim: network %s accepts simulated evidence, which protects nothing (INSECURE)", s.NetworkID()),
			"fine for a test network; on a real one run in an SEV-SNP or TDX guest and set attest.producer")
	case configs.KindSEVSNP:
		return hardware(check, "SEV-SNP", m.TSMReport, m.SEVGuest)
	default:
		return hardware(check, "TDX", m.TSMReport, m.TDXGuest)
	}
}

// hardware checks that the kernel interface for kind is there and writable.
func hardware(check, kind, tsm, device string) Result {
	if isDir(tsm) {
		if err := writable(tsm); err != nil {
			return fail(check, fmt.Sprintf("producer %s: configfs-tsm at %s is not writable by this user (%v)", kind, tsm, err),
				"run the node as root or a user allowed to write there (see contrib/systemd/lowband.service)")
		}
		return ok(check, "producer %s: configfs-tsm present at %s", kind, tsm)
	}
	if _, err := os.Stat(device); err == nil {
		return ok(check, "producer %s: no configfs-tsm, but the guest device %s is there", kind, device)
	}
	return fail(check, fmt.Sprintf("producer %s: neither configfs-tsm (%s) nor %s exists: this is not a %s guest, or configfs is not mounted", kind, tsm, device, kind),
		"run in a "+kind+" guest with a kernel that has configfs-tsm (mount -t configfs none /sys/kernel/config), or change attest.producer")
}

func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}
