package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/node"
	"github.com/lowband/lowband/node/attest"
	"github.com/lowband/lowband/verify"
)

// testnetCommand holds the steps of scripts/testnet.sh that need the project's own code:
// the local network spec, installing it in the homes, and the run's summary.
func testnetCommand() *cli.Command {
	return &cli.Command{
		Name:   "testnet",
		Usage:  "helpers of scripts/testnet.sh: a local network spec, its installation, the run's summary",
		Hidden: true,
		Subcommands: []*cli.Command{
			testnetSpecCommand(),
			testnetInstallCommand(),
			testnetRoundsCommand(),
			testnetSummaryCommand(),
		},
	}
}

// localSpec is what a local test network changes in the spec `lowband init` writes.
type localSpec struct {
	SimRoot      ed25519.PublicKey // the network's only sim root
	Peers        []string          // genesis peers, each staked Stake
	Stake        uint64
	Genesis      time.Time
	InnerSteps   int // H
	BatchSize    int
	RoundSeconds uint64  // nominal round length of the time base
	DeadlineMin  float64 // seconds the adaptive deadline waits at least for a missing peer
	DeadlineMax  float64 // seconds a round waits at most for a silent peer
	// AllowAdversaries lets nodes run adversary modes (lowband run --adversary).
	AllowAdversaries bool
}

// apply turns base into the local network's spec: named testnet, simulated evidence from
// the one generated root only, equal genesis stakes, genesis now, a short round.
func (l localSpec) apply(s *configs.Spec) error {
	if l.Stake < s.Incentives.MinStake {
		return fmt.Errorf("stake %d is below the spec's min_stake %d", l.Stake, s.Incentives.MinStake)
	}
	s.Name = "testnet"
	s.Bootstrap = nil
	s.Attest.Kinds = []string{configs.KindSim}
	s.Attest.AllowSim = true
	s.Attest.SimRoots = []string{hex.EncodeToString(l.SimRoot)}
	s.Attest.SimMeasurements = nil
	s.Incentives.Stakes = make(map[string]uint64, len(l.Peers))
	for _, p := range l.Peers {
		s.Incentives.Stakes[p] = l.Stake
	}
	s.Time.GenesisTime = l.Genesis.UTC().Truncate(time.Second).Format(time.RFC3339)
	s.Time.RoundSeconds = l.RoundSeconds
	s.Training.InnerSteps, s.Training.BatchSize = l.InnerSteps, l.BatchSize
	s.Round.DeadlineMin, s.Round.DeadlineMax = l.DeadlineMin, l.DeadlineMax
	s.Testing.AllowAdversaries = l.AllowAdversaries
	return s.Validate()
}

// writeLocalSpec writes the local network's spec to out and reads it back as every node
// will: it must validate and hash the same.
func writeLocalSpec(base, out string, l localSpec) (*configs.Spec, error) {
	s, err := configs.LoadSpec(base)
	if err != nil {
		return nil, err
	}
	if err := l.apply(s); err != nil {
		return nil, err
	}
	if err := configs.WriteSpec(out, s); err != nil {
		return nil, err
	}
	back, err := configs.LoadSpec(out)
	if err != nil {
		return nil, err
	}
	if back.Hash() != s.Hash() {
		return nil, fmt.Errorf("%s reads back as another network (%s, not %s)", out, back.NetworkID(), s.NetworkID())
	}
	return back, nil
}

func testnetSpecCommand() *cli.Command {
	return &cli.Command{
		Name:  "spec",
		Usage: "write a local network spec: sim evidence from one root, equal stakes, genesis now",
		UsageText: "lowband testnet spec --base FILE --sim-key FILE --out FILE [flags] PEER_ID...\n\n" +
			"Starts from --base (the spec `lowband init` wrote), accepts simulated evidence signed by\n" +
			"the root in --sim-key only (see `lowband attest sim-keygen`), stakes each PEER_ID equally,\n" +
			"sets the genesis time to now and the round's H and batch size, writes --out and reads it\n" +
			"back as a node would.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "base", Required: true, Usage: "network spec to start from"},
			&cli.StringFlag{Name: "sim-key", Required: true, Usage: "sim root key file (hex seed)"},
			&cli.StringFlag{Name: "out", Required: true, Usage: "spec file to write"},
			&cli.Uint64Flag{Name: "stake", Value: 1000, Usage: "genesis stake of each peer"},
			&cli.IntFlag{Name: "inner-steps", Value: 10, Usage: "inner steps per round (H)"},
			&cli.IntFlag{Name: "batch-size", Value: 32, Usage: "samples per inner step"},
			&cli.Uint64Flag{Name: "round-seconds", Value: 5, Usage: "nominal round length of the time base"},
			&cli.Float64Flag{Name: "deadline-min", Value: 15, Usage: "seconds the adaptive deadline waits at least for missing peers"},
			&cli.Float64Flag{Name: "deadline-max", Value: 60, Usage: "seconds a round waits at most for missing peers"},
			&cli.BoolFlag{Name: "allow-adversaries", Usage: "let nodes run adversary modes ([testing] allow_adversaries)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return fmt.Errorf("testnet spec wants the peer IDs to stake")
			}
			root, err := attest.ReadSimKey(c.String("sim-key"))
			if err != nil {
				return err
			}
			l := localSpec{
				SimRoot: root.Public().(ed25519.PublicKey), Peers: c.Args().Slice(), Stake: c.Uint64("stake"),
				Genesis: time.Now(), InnerSteps: c.Int("inner-steps"), BatchSize: c.Int("batch-size"),
				RoundSeconds: c.Uint64("round-seconds"), DeadlineMin: c.Float64("deadline-min"), DeadlineMax: c.Float64("deadline-max"),
				AllowAdversaries: c.Bool("allow-adversaries"),
			}
			s, err := writeLocalSpec(c.String("base"), c.String("out"), l)
			if err != nil {
				return err
			}
			fmt.Fprintf(c.App.Writer, "wrote %s: network %s, run %s, %d staked peers\n", c.String("out"), s.NetworkID(), s.Run, len(l.Peers))
			return nil
		},
	}
}

func testnetInstallCommand() *cli.Command {
	return &cli.Command{
		Name:  "install",
		Usage: "put a network spec and a sim root key into homes, and check each as `lowband run` would",
		UsageText: "lowband testnet install --spec FILE --sim-key FILE HOME...\n\n" +
			"Copies --spec into each home, points its config's attest.sim_key_file at --sim-key, then\n" +
			"loads the home, checks the network accepts its producer, derives the network's\n" +
			"parameters, and verifies an epoch-0 bundle of the home's peer under the spec's policy.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "spec", Required: true, Usage: "network spec file"},
			&cli.StringFlag{Name: "sim-key", Required: true, Usage: "sim root key file (hex seed)"},
		},
		Action: func(c *cli.Context) error {
			data, err := os.ReadFile(c.String("spec"))
			if err != nil {
				return err
			}
			key, err := filepath.Abs(c.String("sim-key"))
			if err != nil {
				return err
			}
			for _, dir := range c.Args().Slice() {
				h, err := configs.ResolveHome(dir)
				if err != nil {
					return err
				}
				if err := installSpec(h, data, key); err != nil {
					return err
				}
				if err := checkHome(c, h); err != nil {
					return fmt.Errorf("%s: %w", h.Dir, err)
				}
			}
			return nil
		},
	}
}

// installSpec writes the spec into h and makes its node sign sim evidence with key.
func installSpec(h configs.Home, spec []byte, key string) error {
	if err := h.Check(); err != nil {
		return err
	}
	cfg, err := configs.LoadConfig(h.ConfigPath())
	if err != nil {
		return err
	}
	cfg.Attest.Producer, cfg.Attest.SimKeyFile = configs.KindSim, key
	if err := cfg.Validate(); err != nil {
		return err
	}
	if err := configs.WriteFileAtomic(h.SpecPath(cfg), spec, 0o644); err != nil {
		return err
	}
	return configs.WriteConfig(h.ConfigPath(), cfg)
}

// checkHome is what `lowband run` checks before it joins, plus the one thing a wrong sim
// root would break silently: that the node's own bundle verifies on its network.
func checkHome(c *cli.Context, h configs.Home) error {
	cfg, spec, err := h.Load()
	if err != nil {
		return err
	}
	if err := attest.CheckStart(cfg, spec); err != nil {
		return err
	}
	params, err := node.NewParams(spec)
	if err != nil {
		return err
	}
	prod, err := attest.NewProducer(cfg.Attest, h.Dir)
	if err != nil {
		return err
	}
	identity, err := h.LoadIdentity()
	if err != nil {
		return err
	}
	eph, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	b, err := attest.Attest(c.Context, prod, spec.NetworkID(), spec.Run, identity, 0, eph)
	if err != nil {
		return err
	}
	seed := verify.EpochSeed(b.Network, b.Run, 0)
	if _, err := verify.Verify(b, params.Checker.Policy, seed[:], 0, params.Checker.EpochTime(0)); err != nil {
		return fmt.Errorf("its own epoch-0 bundle does not verify on %s: %w", spec.NetworkID(), err)
	}
	return nil
}
