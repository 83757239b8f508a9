package configs

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// TEE kinds a network can accept (the names of package verify's kinds).
const (
	KindSEVSNP = "sev-snp"
	KindTDX    = "tdx"
	KindSim    = "sim"
)

// AttestKinds lists the kind names in a stable order.
var AttestKinds = []string{KindSEVSNP, KindTDX, KindSim}

// Sizes of hex-encoded policy values, in bytes once decoded.
const (
	measurementSize  = 48 // SEV-SNP MEASUREMENT, TDX MRTD and RTMRs, sim measurement
	teeTCBSVNSize    = 16 // TDX TEE_TCB_SVN
	simRootSize      = ed25519.PublicKeySize
	maxAllowListLen  = 64
	maxEpochRounds   = 1 << 20
	defaultEpochRnds = 100
)

// AttestSpec is the network's attestation policy: which TEE evidence a node accepts.
// Every node of a network applies the same policy, so it is part of the hashed spec.
type AttestSpec struct {
	// Kinds lists the accepted TEE kinds: "sev-snp", "tdx", "sim". Empty means the hardware
	// kinds (sev-snp and tdx). Listing "sim" accepts simulated evidence, which protects
	// nothing: for development and test networks only.
	Kinds []string `toml:"kinds" cbor:"1,keyasint" comment:"accepted TEE kinds: sev-snp, tdx, sim (sim is insecure: test networks only)"`
	// AllowSim is the explicit opt-in to simulated evidence. Listing "sim" in Kinds sets it,
	// and setting it adds "sim" to Kinds: both spellings give the same network.
	AllowSim bool `toml:"allow_sim" cbor:"2,keyasint" comment:"accept simulated TEE evidence (insecure; same as listing sim in kinds)"`
	// SimRoots are the hex ed25519 public keys whose sim evidence the network accepts. With
	// sim allowed and no roots, the public devnet root is filled in (see DevnetSimRootSeed):
	// anyone can sign with it.
	SimRoots []string `toml:"sim_roots" cbor:"3,keyasint" comment:"hex ed25519 public keys of the sim roots (empty with sim: the public devnet root)"`
	// SimMeasurements is the allow-list of sim measurements (hex, 48 bytes); empty: any.
	SimMeasurements []string `toml:"sim_measurements" cbor:"4,keyasint" comment:"allowed sim measurements, hex 48 bytes (empty: not checked)"`
	// MaxAgeEpochs is how many epochs old an attestation bundle may be.
	MaxAgeEpochs uint64 `toml:"max_age_epochs" cbor:"5,keyasint" comment:"how many epochs old an attestation bundle may be"`
	// EpochRounds is the length of an epoch in rounds: a node attests a new ephemeral key
	// every epoch. 0 means the default, 100.
	EpochRounds uint64 `toml:"epoch_rounds" cbor:"6,keyasint" comment:"rounds per attestation epoch (a new ephemeral key each epoch)"`

	SNP SNPSpec `toml:"snp" cbor:"7,keyasint"`
	TDX TDXSpec `toml:"tdx" cbor:"8,keyasint"`
}

// SNPSpec is the policy for AMD SEV-SNP evidence.
type SNPSpec struct {
	// Measurements is the allow-list of launch measurements (hex, 48 bytes). Empty: the
	// measurement is not checked, and verdicts say so.
	Measurements []string `toml:"measurements" cbor:"1,keyasint" comment:"allowed launch measurements, hex 48 bytes (empty: not checked)"`
	// MinTCB is the component-wise minimum reported TCB.
	MinTCB SNPTCBSpec `toml:"min_tcb" cbor:"2,keyasint"`
	// MaxVMPL is the least privileged VMPL a report may come from (0 to 3).
	MaxVMPL uint32 `toml:"max_vmpl" cbor:"3,keyasint" comment:"least privileged VMPL a report may come from, 0-3"`
	// AllowDebug accepts guests with debugging allowed. Never on a production network.
	AllowDebug bool `toml:"allow_debug" cbor:"4,keyasint" comment:"accept debug-enabled guests (never in production)"`
}

// SNPTCBSpec is an SEV-SNP TCB version by security patch level.
type SNPTCBSpec struct {
	Bootloader uint8 `toml:"bootloader" cbor:"1,keyasint"`
	TEE        uint8 `toml:"tee" cbor:"2,keyasint"`
	SNP        uint8 `toml:"snp" cbor:"3,keyasint"`
	Microcode  uint8 `toml:"microcode" cbor:"4,keyasint"`
}

// TDXSpec is the policy for Intel TDX evidence.
type TDXSpec struct {
	// MRTDs is the allow-list of TD measurements (hex, 48 bytes). Empty: not checked. The
	// MRTD measures only the firmware, so when it is set RTMR0-2 must be set too.
	MRTDs []string `toml:"mrtds" cbor:"1,keyasint" comment:"allowed MRTDs, hex 48 bytes (empty: not checked)"`
	// RTMRs[i] is the allow-list of runtime measurement register i (hex, 48 bytes each).
	RTMR0 []string `toml:"rtmr0" cbor:"2,keyasint" comment:"allowed RTMR0 values (empty: not checked)"`
	RTMR1 []string `toml:"rtmr1" cbor:"3,keyasint" comment:"allowed RTMR1 values (empty: not checked)"`
	RTMR2 []string `toml:"rtmr2" cbor:"4,keyasint" comment:"allowed RTMR2 values (empty: not checked)"`
	RTMR3 []string `toml:"rtmr3" cbor:"5,keyasint" comment:"allowed RTMR3 values (empty: not checked)"`
	// MinTeeTCBSVN is the component-wise minimum TEE TCB SVN (hex, 16 bytes), or empty.
	MinTeeTCBSVN string `toml:"min_tee_tcb_svn" cbor:"6,keyasint" comment:"component-wise minimum TEE_TCB_SVN, hex 16 bytes (empty: any)"`
	// AllowDebug accepts TDs with the DEBUG attribute. Never on a production network.
	AllowDebug bool `toml:"allow_debug" cbor:"7,keyasint" comment:"accept debug TDs (never in production)"`
}

// DevnetSimRootSeed is the ed25519 seed of the public devnet sim root. It is derived from a
// published string, so anyone can sign sim evidence with it: it lets a development network
// run with no key setup, and it must never be trusted for anything.
func DevnetSimRootSeed() [32]byte { return sha256.Sum256([]byte("lowband/devnet-sim-root/v1")) }

// DevnetSimRoot is the hex public key of the devnet sim root.
func DevnetSimRoot() string {
	seed := DevnetSimRootSeed()
	return hex.EncodeToString(ed25519.NewKeyFromSeed(seed[:]).Public().(ed25519.PublicKey))
}

// AllowsSim reports whether the spec accepts simulated evidence (after validation).
func (a *AttestSpec) AllowsSim() bool { return a.AllowSim || slices.Contains(a.Kinds, KindSim) }

// fill normalises the spec: default kinds, the sim opt-in in both spellings, the devnet
// root, the default epoch length, lower-case hex.
func (a *AttestSpec) fill() {
	if len(a.Kinds) == 0 && !a.AllowSim {
		a.Kinds = []string{KindSEVSNP, KindTDX}
	}
	if a.AllowsSim() {
		a.AllowSim = true
		if !slices.Contains(a.Kinds, KindSim) {
			a.Kinds = append(a.Kinds, KindSim)
		}
		if len(a.SimRoots) == 0 {
			a.SimRoots = []string{DevnetSimRoot()}
		}
	}
	if a.EpochRounds == 0 {
		a.EpochRounds = defaultEpochRnds
	}
	for _, l := range [][]string{a.SimRoots, a.SimMeasurements, a.SNP.Measurements, a.TDX.MRTDs, a.TDX.RTMR0, a.TDX.RTMR1, a.TDX.RTMR2, a.TDX.RTMR3} {
		for i := range l {
			l[i] = strings.ToLower(l[i])
		}
	}
	a.TDX.MinTeeTCBSVN = strings.ToLower(a.TDX.MinTeeTCBSVN)
}

// validate fills defaults (see fill) and checks every field.
func (a *AttestSpec) validate() error {
	a.fill()
	for i, k := range a.Kinds {
		if !slices.Contains(AttestKinds, k) {
			return keyErr(fmt.Sprintf("kinds[%d]", i), "unknown kind %q (want one of %v)", k, AttestKinds)
		}
		if slices.Index(a.Kinds, k) != i {
			return keyErr(fmt.Sprintf("kinds[%d]", i), "%q is listed twice", k)
		}
	}
	if !a.AllowSim && len(a.SimRoots) > 0 {
		return keyErr("sim_roots", "sim roots are named but sim is not allowed (set allow_sim or list sim in kinds)")
	}
	if err := checkHexList("sim_roots", a.SimRoots, simRootSize); err != nil {
		return err
	}
	if err := checkHexList("sim_measurements", a.SimMeasurements, measurementSize); err != nil {
		return err
	}
	if a.EpochRounds > maxEpochRounds {
		return keyErr("epoch_rounds", "%d not in [1, %d]", a.EpochRounds, maxEpochRounds)
	}
	if a.MaxAgeEpochs > 1<<20 {
		return keyErr("max_age_epochs", "%d is too many", a.MaxAgeEpochs)
	}
	if err := a.SNP.validate(); err != nil {
		return prefixKey("snp", err)
	}
	if err := a.TDX.validate(); err != nil {
		return prefixKey("tdx", err)
	}
	return nil
}

func (s *SNPSpec) validate() error {
	if err := checkHexList("measurements", s.Measurements, measurementSize); err != nil {
		return err
	}
	if s.MaxVMPL > 3 {
		return keyErr("max_vmpl", "%d not in [0, 3]", s.MaxVMPL)
	}
	return nil
}

func (t *TDXSpec) validate() error {
	for _, l := range []struct {
		key  string
		list []string
	}{{"mrtds", t.MRTDs}, {"rtmr0", t.RTMR0}, {"rtmr1", t.RTMR1}, {"rtmr2", t.RTMR2}, {"rtmr3", t.RTMR3}} {
		if err := checkHexList(l.key, l.list, measurementSize); err != nil {
			return err
		}
	}
	// MRTD measures only the TD firmware; RTMR0-2 measure its configuration, the kernel, and
	// the command line and initrd. Pinning the firmware alone would admit any application.
	if len(t.MRTDs) > 0 {
		for i, l := range [][]string{t.RTMR0, t.RTMR1, t.RTMR2} {
			if len(l) == 0 {
				return keyErr(fmt.Sprintf("rtmr%d", i), "an MRTD allow-list needs allow-lists for rtmr0, rtmr1 and rtmr2 too: the MRTD alone admits any kernel and application")
			}
		}
	}
	if t.MinTeeTCBSVN != "" {
		if b, err := hex.DecodeString(t.MinTeeTCBSVN); err != nil || len(b) != teeTCBSVNSize {
			return keyErr("min_tee_tcb_svn", "want %d bytes of hex", teeTCBSVNSize)
		}
	}
	return nil
}

// checkHexList checks that every entry is size bytes of hex, with no duplicates.
func checkHexList(key string, list []string, size int) error {
	if len(list) > maxAllowListLen {
		return keyErr(key, "%d entries, at most %d", len(list), maxAllowListLen)
	}
	for i, s := range list {
		b, err := hex.DecodeString(s)
		if err != nil || len(b) != size {
			return &KeyError{Key: fmt.Sprintf("%s[%d]", key, i), Err: fmt.Errorf("want %d bytes of hex", size)}
		}
		if slices.Index(list, s) != i {
			return &KeyError{Key: fmt.Sprintf("%s[%d]", key, i), Err: errors.New("listed twice")}
		}
	}
	return nil
}

// DecodeHexList decodes a validated list of hex values.
func DecodeHexList(list []string) ([][]byte, error) {
	out := make([][]byte, 0, len(list))
	for _, s := range list {
		b, err := hex.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("decoding %q: %w", s, err)
		}
		out = append(out, b)
	}
	return out, nil
}

// ParseAttestSpec parses an attestation policy on its own: the keys of a network spec's
// [attest] section at the top level of the file (kinds, allow_sim, sim_roots, [snp], [tdx]
// ...). `lowband attest verify --policy` reads it. Defaults are filled and every field is
// checked; errors name the file, the line and the key.
func ParseAttestSpec(name string, data []byte) (*AttestSpec, error) {
	a := &AttestSpec{}
	if err := decodeStrict(data, a); err != nil {
		return nil, decodeError(name, data, err)
	}
	if err := a.validate(); err != nil {
		return nil, withLine(name, data, err)
	}
	return a, nil
}
