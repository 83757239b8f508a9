package doctor

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/configs"
)

// Env is what Run needs from outside: the home, and the ways to reach the machine, the
// running node and the network. cmd/lowband fills it with the real ones; tests with
// doubles.
type Env struct {
	Home    configs.Home
	Machine Machine // zero = DefaultMachine
	// Running fetches what this home's node reports through its local API; it returns
	// nil and the reason when no node answers.
	Running func(ctx context.Context) (*Running, error)
	// Prober dials the bootstrap peers (nil: not checked); ProbeTimeout bounds each
	// (0 = 10 s).
	Prober       Prober
	ProbeTimeout time.Duration
	FreeBytes    func(dir string) (uint64, error) // nil = FreeBytes
	ClockSynced  func() (bool, error)             // nil = ClockSynced
}

// Run runs every check in order and returns one result per line of the report. A check
// whose input is missing is reported as skipped. It never fails: what goes wrong is in
// the results.
func Run(ctx context.Context, env Env) []Result {
	env = env.withDefaults()
	h := env.Home
	out := []Result{HomeDir(h)}
	if _, err := os.Stat(h.Dir); errors.Is(err, fs.ErrNotExist) {
		return append(out, skip("other checks", "not checked: there is no home directory"))
	}
	keyRes, self := Key(h)
	out = append(out, keyRes)
	cfgRes, cfg := Config(h)
	out = append(out, cfgRes)
	var run *Running
	var why error
	if env.Running != nil {
		run, why = env.Running(ctx)
	}
	var spec *configs.Spec
	if cfg == nil {
		out = append(out, skip("network and ports", "not checked: needs a valid config.toml"))
	} else {
		var rs []Result
		rs, spec = withSpec(ctx, env, cfg, self, run)
		out = append(out, rs...)
	}
	out = append(out, NodeRunning(h, run, why), DHT(run))
	out = append(out, Gossip(run)...)
	if cfg != nil {
		out = append(out, Reachability(cfg, run))
	}
	out = append(out, Clock(env.ClockSynced))
	switch {
	case spec == nil:
		out = append(out, skip("clock skew", "not checked: needs a valid config and network spec"))
	case env.Prober == nil:
		out = append(out, skip("clock skew", "not checked: no way to dial peers"))
	default:
		out = append(out, ClockSkew(ctx, cfg, spec, self, env.Prober, env.ProbeTimeout))
	}
	return append(out, Disk(h.Dir, env.FreeBytes))
}

// withSpec runs the checks that need the config: the spec, then attestation, ports and
// bootstrap peers. It returns the spec, nil when it is not valid.
func withSpec(ctx context.Context, env Env, cfg *configs.Config, self peer.ID, run *Running) ([]Result, *configs.Spec) {
	specRes, spec := Spec(env.Home, cfg)
	out := []Result{specRes}
	if spec != nil {
		out = append(out, Attestation(cfg, spec, env.Machine))
	}
	out = append(out, Ports(cfg, run)...)
	if spec == nil {
		return append(out, skip("bootstrap", "not checked: needs a valid network spec")), nil
	}
	if env.Prober == nil {
		return append(out, skip("bootstrap", "not checked: no way to dial peers")), spec
	}
	return append(out, Bootstrap(ctx, cfg, spec, self, env.Prober, env.ProbeTimeout)...), spec
}

// withDefaults fills the fields left empty with this system's ways.
func (env Env) withDefaults() Env {
	if env.Machine == (Machine{}) {
		env.Machine = DefaultMachine
	}
	if env.ProbeTimeout <= 0 {
		env.ProbeTimeout = 10 * time.Second
	}
	if env.FreeBytes == nil {
		env.FreeBytes = FreeBytes
	}
	if env.ClockSynced == nil {
		env.ClockSynced = ClockSynced
	}
	return env
}
