package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/node/attest"
	"github.com/lowband/lowband/verify"
)

func attestCommand() *cli.Command {
	return &cli.Command{
		Name:  "attest",
		Usage: "verify and produce TEE attestation evidence",
		Subcommands: []*cli.Command{
			attestVerifyCommand(),
			simKeygenCommand(),
			simBundleCommand(),
		},
	}
}

func attestVerifyCommand() *cli.Command {
	return &cli.Command{
		Name:  "verify",
		Usage: "verify an attestation bundle or raw evidence offline; exits 0 only when it verifies",
		UsageText: "lowband attest verify FILE [--kind bundle|sev-snp|tdx] [--policy FILE] [--certs FILE]\n" +
			"    [--collateral DIR] [--now RFC3339] [--epoch N] [--json]\n\n" +
			"FILE is an attestation bundle (--kind bundle, the default), a raw SEV-SNP report\n" +
			"(--kind sev-snp; its VCEK or VLEK certificate, DER or PEM, in --certs) or a raw TDX quote\n" +
			"(--kind tdx). Without --policy the production defaults apply: hardware kinds only, debug\n" +
			"refused, VMPL 0, no allow-list (the measurement is not checked, and the verdict says so).\n" +
			"--policy is a file with the keys of a network spec's [attest] section. --collateral DIR\n" +
			"holds Intel PCS responses: tcbinfo.json, qeidentity.json, tcbinfo-chain.pem and\n" +
			"qeidentity-chain.pem. A bundle's binding is checked against its own network, run and\n" +
			"epoch seed; --epoch sets the current epoch for the age check (default: the bundle's).",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "kind", Value: "bundle", Usage: "bundle, sev-snp or tdx"},
			&cli.StringFlag{Name: "policy", Usage: "attestation policy file (TOML, the [attest] keys of a network spec)"},
			&cli.StringFlag{Name: "certs", Usage: "VCEK or VLEK certificate for a raw SEV-SNP report (DER or PEM)"},
			&cli.StringFlag{Name: "collateral", Usage: "directory of Intel PCS collateral for TDX"},
			&cli.StringFlag{Name: "now", Usage: "time at which certificates must be valid, RFC 3339 (default: now)"},
			&cli.Uint64Flag{Name: "epoch", Usage: "current epoch for the bundle age check (default: the bundle's epoch)"},
			jsonFlag,
		},
		Action: attestVerify,
	}
}

// verifyResult is what `attest verify --json` prints.
type verifyResult struct {
	OK                 bool   `json:"ok"`
	Kind               string `json:"kind"`
	Error              string `json:"error"`
	Detail             string `json:"detail"`
	Measurement        string `json:"measurement"`
	ReportData         string `json:"report_data"`
	MeasurementChecked bool   `json:"measurement_checked"`
	Insecure           bool   `json:"insecure"`
	TCB                string `json:"tcb,omitempty"`
	PeerID             string `json:"peer_id,omitempty"`
	BundleHash         string `json:"bundle_hash,omitempty"`
}

func attestVerify(c *cli.Context) error {
	args, err := flagsAfterArgs(c)
	if err != nil {
		return err
	}
	if len(args) != 1 {
		return fmt.Errorf("attest verify takes one FILE (got %d arguments)", len(args))
	}
	p, now, err := verifyInputs(c)
	if err != nil {
		return err
	}
	data, err := attest.ReadFile(args[0])
	if err != nil {
		return err
	}
	res := verifyResult{Kind: c.String("kind")}
	var v *verify.Verdict
	switch c.String("kind") {
	case "bundle":
		v, err = verifyBundleFile(c, data, p, now, &res)
	case string(verify.KindSEVSNP):
		v, err = verifySNPFile(c, data, p, now)
	case string(verify.KindTDX):
		// A raw quote as a provider returned it may carry bytes after its signed data;
		// bundles never do (producers trim).
		if data, err = verify.TrimTDXQuote(data); err == nil {
			v, err = verify.VerifyEvidence(verify.KindTDX, data, nil, p, now)
		}
	default:
		return fmt.Errorf("unknown --kind %q (want bundle, sev-snp or tdx)", c.String("kind"))
	}
	return printVerdict(c, &res, v, err)
}

// verifyInputs reads the policy, the collateral and the time.
func verifyInputs(c *cli.Context) (*verify.Policy, time.Time, error) {
	now := time.Now()
	if s := c.String("now"); s != "" {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return nil, now, fmt.Errorf("--now: %w", err)
		}
		now = t
	}
	p := verify.DefaultPolicy(verify.KindSEVSNP, verify.KindTDX)
	if f := c.String("policy"); f != "" {
		var err error
		if p, err = attest.LoadPolicyFile(f); err != nil {
			return nil, now, err
		}
	}
	if dir := c.String("collateral"); dir != "" {
		col, err := attest.LoadTDXCollateral(dir)
		if err != nil {
			return nil, now, err
		}
		p.TDX.Collateral = col
	}
	return p, now, nil
}

func verifyBundleFile(c *cli.Context, data []byte, p *verify.Policy, now time.Time, res *verifyResult) (*verify.Verdict, error) {
	b, err := verify.UnmarshalBundle(data)
	if err != nil {
		return nil, err
	}
	res.Kind, res.PeerID = string(b.Kind), b.PeerID
	h := b.Hash()
	res.BundleHash = hex.EncodeToString(h[:])
	current := b.Epoch
	if c.IsSet("epoch") {
		current = c.Uint64("epoch")
	}
	seed := verify.EpochSeed(b.Network, b.Run, b.Epoch)
	return verify.Verify(b, p, seed[:], current, now)
}

func verifySNPFile(c *cli.Context, data []byte, p *verify.Policy, now time.Time) (*verify.Verdict, error) {
	var certs [][]byte
	if f := c.String("certs"); f != "" {
		var err error
		if certs, err = attest.ReadCertificates(f); err != nil {
			return nil, err
		}
	}
	return verify.VerifyEvidence(verify.KindSEVSNP, data, certs, p, now)
}

// printVerdict prints the result and returns exit status 1 (without an error line) when
// verification failed.
func printVerdict(c *cli.Context, res *verifyResult, v *verify.Verdict, verr error) error {
	if verr != nil {
		res.Error = string(verify.ClassOf(verr))
		res.Detail = strings.TrimPrefix(verr.Error(), res.Error+": ")
	} else {
		res.OK, res.Kind = true, string(v.Kind)
		res.Measurement, res.ReportData = hex.EncodeToString(v.Measurement), hex.EncodeToString(v.ReportData)
		res.MeasurementChecked, res.Insecure, res.TCB = v.MeasurementChecked, v.Insecure, v.TCB
	}
	w := c.App.Writer
	if c.Bool("json") {
		if err := writeJSON(w, res); err != nil {
			return err
		}
	} else {
		printVerdictText(w, res)
	}
	if !res.OK {
		return exitCode(1)
	}
	return nil
}

func printVerdictText(w io.Writer, res *verifyResult) {
	if !res.OK {
		fmt.Fprintf(w, "FAILED (%s): %s\n", res.Error, res.Detail)
		return
	}
	fmt.Fprintf(w, "OK: %s evidence verifies\n", res.Kind)
	if res.Insecure {
		fmt.Fprintln(w, "INSECURE: simulated TEE evidence; nothing protects this key or code")
	}
	fmt.Fprintf(w, "measurement: %s\n", res.Measurement)
	if !res.MeasurementChecked {
		fmt.Fprintln(w, "  (not checked: the policy has no allow-list for this kind)")
	}
	fmt.Fprintf(w, "report data: %s\n", res.ReportData)
	if res.TCB != "" {
		fmt.Fprintf(w, "tcb: %s\n", res.TCB)
	}
	if res.BundleHash != "" {
		fmt.Fprintf(w, "peer: %s\nbundle: %s\n", res.PeerID, res.BundleHash)
	}
}

func simKeygenCommand() *cli.Command {
	return &cli.Command{
		Name:      "sim-keygen",
		Usage:     "create a sim root key for a test network (insecure by design)",
		UsageText: "lowband attest sim-keygen --out FILE\n\nWrites the private key (hex seed, mode 0600) to FILE and prints the public key,\nwhich goes in the network spec's [attest] sim_roots.",
		Flags:     []cli.Flag{&cli.StringFlag{Name: "out", Required: true, Usage: "key file to create (never overwritten)"}},
		Action: func(c *cli.Context) error {
			_, key, err := ed25519.GenerateKey(rand.Reader)
			if err != nil {
				return err
			}
			if err := attest.WriteSimKey(c.String("out"), key); err != nil {
				return err
			}
			fmt.Fprintf(c.App.Writer, "sim root public key: %s\n", hex.EncodeToString(key.Public().(ed25519.PublicKey)))
			return nil
		},
	}
}

func simBundleCommand() *cli.Command {
	return &cli.Command{
		Name:  "sim-bundle",
		Usage: "make an attestation bundle with simulated evidence (testnets only)",
		UsageText: "lowband attest sim-bundle --out FILE (--spec FILE | --network ID --run RUN) [--home DIR]\n" +
			"    [--key FILE] [--epoch N] [--measurement HEX] [--ephemeral-key HEX | --ephemeral-out FILE]\n\n" +
			"Signs sim evidence with the sim root in --key (default: the public devnet root), bound to\n" +
			"the network (--spec gives its network ID and run), the home's peer, epoch and an ephemeral\n" +
			"ed25519 key, and signs that binding with the home's identity key (the bundle speaks for\n" +
			"the peer of the home in --home):\n" +
			"--ephemeral-key names its public key; otherwise a new one is generated and its private\n" +
			"seed written (hex, mode 0600) to --ephemeral-out.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Required: true, Usage: "bundle file to write"},
			&cli.StringFlag{Name: "key", Usage: "sim root key file (default: the public devnet root)"},
			&cli.StringFlag{Name: "spec", Usage: "network spec file: takes the network ID and run from it"},
			&cli.StringFlag{Name: "network", Usage: "network ID (as on the wire, e.g. devnet-1a2b3c4d)"},
			&cli.StringFlag{Name: "run", Usage: "run name"},
			homeFlag,
			&cli.Uint64Flag{Name: "epoch", Usage: "attestation epoch"},
			&cli.StringFlag{Name: "measurement", Usage: "measurement to claim, hex 48 bytes (default: zeros)"},
			&cli.StringFlag{Name: "ephemeral-key", Usage: "ephemeral ed25519 public key, hex"},
			&cli.StringFlag{Name: "ephemeral-out", Usage: "where to write a generated ephemeral private seed"},
		},
		Action: simBundle,
	}
}

func simBundle(c *cli.Context) error {
	network, run, err := simBundleNetwork(c)
	if err != nil {
		return err
	}
	root := attest.DevnetSimRoot()
	if f := c.String("key"); f != "" {
		if root, err = attest.ReadSimKey(f); err != nil {
			return err
		}
	}
	measurement := make([]byte, verify.MeasurementSize)
	if s := c.String("measurement"); s != "" {
		if measurement, err = hex.DecodeString(s); err != nil || len(measurement) != verify.MeasurementSize {
			return fmt.Errorf("--measurement: want %d bytes of hex", verify.MeasurementSize)
		}
	}
	eph, err := simBundleEphemeral(c)
	if err != nil {
		return err
	}
	hm, err := home(c)
	if err != nil {
		return err
	}
	identity, err := hm.LoadIdentity()
	if err != nil {
		return err
	}
	b, err := verify.NewSimBundle(root, measurement, network, run, identity, c.Uint64("epoch"), eph)
	if err != nil {
		return err
	}
	enc, err := b.Marshal()
	if err != nil {
		return err
	}
	if err := configs.WriteFileAtomic(c.String("out"), enc, 0o644); err != nil {
		return err
	}
	h := b.Hash()
	fmt.Fprintf(c.App.Writer, "wrote %s: sim bundle %s for %s on %s/%s epoch %d\n",
		c.String("out"), hex.EncodeToString(h[:]), b.PeerID, network, run, b.Epoch)
	return nil
}

func simBundleNetwork(c *cli.Context) (network, run string, err error) {
	if f := c.String("spec"); f != "" {
		s, err := configs.LoadSpec(f)
		if err != nil {
			return "", "", err
		}
		return s.NetworkID(), s.Run, nil
	}
	if c.String("network") == "" || c.String("run") == "" {
		return "", "", fmt.Errorf("give --spec, or both --network and --run")
	}
	return c.String("network"), c.String("run"), nil
}

func simBundleEphemeral(c *cli.Context) (ed25519.PublicKey, error) {
	if s := c.String("ephemeral-key"); s != "" {
		k, err := hex.DecodeString(s)
		if err != nil || len(k) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("--ephemeral-key: want %d bytes of hex", ed25519.PublicKeySize)
		}
		return k, nil
	}
	out := c.String("ephemeral-out")
	if out == "" {
		return nil, fmt.Errorf("give --ephemeral-key, or --ephemeral-out to generate one")
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	if err := attest.WriteSimKey(out, priv); err != nil { // same format: hex seed, 0600, never overwritten
		return nil, fmt.Errorf("ephemeral key: %w", err)
	}
	return pub, nil
}

// flagsAfterArgs applies flags that follow the positional arguments (urfave/cli stops at
// the first argument), so that `attest verify FILE --json` works as documented. It returns
// the positional arguments.
func flagsAfterArgs(c *cli.Context) ([]string, error) {
	var pos []string
	rest := c.Args().Slice()
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a == "--" {
			return append(pos, rest[i+1:]...), nil
		}
		if len(a) < 2 || a[0] != '-' {
			pos = append(pos, a)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		f := commandFlag(c.Command, name)
		if f == nil {
			return nil, fmt.Errorf("flag provided but not defined: -%s", name)
		}
		if _, isBool := f.(*cli.BoolFlag); isBool && !hasValue {
			value, hasValue = "true", true
		}
		if !hasValue {
			if i+1 >= len(rest) {
				return nil, fmt.Errorf("flag needs an argument: -%s", name)
			}
			i++
			value = rest[i]
		}
		if err := c.Set(f.Names()[0], value); err != nil {
			return nil, fmt.Errorf("invalid value %q for flag -%s: %w", value, name, err)
		}
	}
	return pos, nil
}

func commandFlag(cmd *cli.Command, name string) cli.Flag {
	for _, f := range cmd.Flags {
		if slices.Contains(f.Names(), name) {
			return f
		}
	}
	return nil
}
