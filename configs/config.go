package configs

import (
	"errors"
	"fmt"
	"net"
	"slices"
)

// Profiles a home directory can be created from.
const (
	ProfileLocal     = "local"     // a swarm on one machine: loopback, DHT server, no colocation penalty
	ProfilePublic    = "public"    // a contributor on the internet: all interfaces, DHT auto mode, public addresses only
	ProfileBootstrap = "bootstrap" // a bootstrap node: fixed port, DHT server, no training, public addresses only
)

// Profiles lists the profile names in a stable order.
var Profiles = []string{ProfileLocal, ProfilePublic, ProfileBootstrap}

// Roles a node can run as.
const (
	RoleNode      = "node"      // trains and gossips
	RoleBootstrap = "bootstrap" // DHT server and gossip peer exchange only
)

// DefaultMemoryLimitMiB is the default soft memory limit. A training node of the default
// charlm task holds about 125 MiB of live heap; with no limit the collector lets the heap
// grow to twice what is live. Under this limit it peaks at 186 MiB resident, and spends
// about 5% more CPU than under 256 MiB (the binary's own pages are some 30 MiB of it). A
// network of a larger model needs more: the node warns when the limit is below its
// estimate.
const DefaultMemoryLimitMiB = 150

// maxMemoryLimitMiB bounds memory_limit_mib (16 TiB).
const maxMemoryLimitMiB = 1 << 24

// Config is a node's own settings, stored as config.toml in its home directory.
type Config struct {
	Profile string `toml:"profile" comment:"profile this file was created from: local, public or bootstrap"`
	Role    string `toml:"role" comment:"node (trains) or bootstrap (DHT and gossip only); run --role overrides"`
	// SpecFile is the network spec, relative to the home directory unless absolute.
	SpecFile string `toml:"spec_file" comment:"network spec, relative to the home directory unless absolute"`
	// MemoryLimitMiB is the Go runtime's soft memory limit (runtime/debug.SetMemoryLimit):
	// past it the collector runs more often and returns freed memory to the system sooner.
	MemoryLimitMiB int `toml:"memory_limit_mib" comment:"soft limit of the node's memory in MiB: the Go collector works harder near it (0: none; the GOMEMLIMIT environment variable overrides it)"`

	P2P      P2PConfig      `toml:"p2p"`
	API      APIConfig      `toml:"api"`
	Log      LogConfig      `toml:"log"`
	Attest   AttestConfig   `toml:"attest"`
	Training TrainingConfig `toml:"training"`
}

// maxForwardHoldMS bounds p2p.forward_hold_ms: a forward that a peer needs waits the
// hold at every hop, and rounds close on deadlines of seconds.
const maxForwardHoldMS = 10_000

// P2PConfig is the libp2p host's settings.
type P2PConfig struct {
	Listen    []string `toml:"listen" comment:"multiaddrs to listen on (TCP and QUIC)"`
	Announce  []string `toml:"announce" comment:"multiaddrs to announce instead of the listen addresses (empty: automatic)"`
	Bootstrap []string `toml:"bootstrap" comment:"bootstrap peers, /ip4/.../p2p/<id>; added to the network spec's list"`
	DHTMode   string   `toml:"dht_mode" comment:"server, client or auto"`
	ConnLow   int      `toml:"conn_low" comment:"connection manager low watermark"`
	ConnHigh  int      `toml:"conn_high" comment:"connection manager high watermark"`
	// ColocationPenalty keeps gossipsub's IP-colocation penalty. Local swarms share
	// 127.0.0.1 and turn it off.
	ColocationPenalty bool `toml:"colocation_penalty" comment:"penalise many peers on one IP (off for local swarms on 127.0.0.1)"`
	// PublicOnly announces and keeps in the DHT only addresses others can dial over the
	// internet. On for the public and bootstrap profiles; off on a LAN or loopback.
	PublicOnly bool `toml:"public_only" comment:"announce and keep in the DHT only public addresses: no loopback, private or link-local ones (announce addresses are kept as given); off for a LAN"`
	// ForwardHoldMS is the longest a gossip message from a peer waits, once checked,
	// before it is forwarded to the mesh peers that have not shown they hold it (p2p's
	// ForwardHold): 0 is the default (2 s), negative none, at most maxForwardHoldMS.
	ForwardHoldMS int `toml:"forward_hold_ms" comment:"longest wait, in ms, before forwarding a checked gossip message to mesh peers that have not shown they hold it (0: 2000; negative: forward at once; spares duplicates where the publisher reached most peers)"`

	NATConfig // getting through NAT, and relaying for others (config_nat.go)
}

// APIConfig is the local HTTP API.
type APIConfig struct {
	Listen string `toml:"listen" comment:"host:port of the local HTTP API; port 0 picks a free one and writes it to api.addr"`
}

// LogConfig selects the log format and level.
type LogConfig struct {
	Format string `toml:"format" comment:"text or json"`
	Level  string `toml:"level" comment:"debug, info, warn or error"`
}

// Default returns the configuration of a profile. It fails for an unknown profile.
func Default(profile string) (*Config, error) {
	c := &Config{
		Profile:        profile,
		Role:           RoleNode,
		SpecFile:       "network.toml",
		MemoryLimitMiB: DefaultMemoryLimitMiB,
		API:            APIConfig{Listen: "127.0.0.1:0"},
		Log:            LogConfig{Format: "text", Level: "info"},
		P2P:            P2PConfig{ConnLow: 64, ConnHigh: 192, DHTMode: "auto", ColocationPenalty: true, NATConfig: defaultNATConfig()},
		Attest:         defaultAttestConfig(),
		Training:       defaultTrainingConfig(),
	}
	switch profile {
	case ProfileLocal:
		c.P2P.Listen = []string{"/ip4/127.0.0.1/tcp/0", "/ip4/127.0.0.1/udp/0/quic-v1"}
		c.P2P.DHTMode = "server"
		c.P2P.ColocationPenalty = false
	case ProfilePublic:
		c.P2P.Listen = []string{"/ip4/0.0.0.0/tcp/4001", "/ip4/0.0.0.0/udp/4001/quic-v1"}
		c.P2P.PublicOnly = true
		c.P2P.AutoNAT, c.P2P.NATService, c.P2P.HolePunching, c.P2P.RelayClient = true, true, true, true
	case ProfileBootstrap:
		c.Role = RoleBootstrap
		c.P2P.Listen = []string{"/ip4/0.0.0.0/tcp/4001", "/ip4/0.0.0.0/udp/4001/quic-v1"}
		c.P2P.DHTMode = "server"
		c.P2P.PublicOnly = true // its addresses go into network specs; on a LAN set it false
		c.P2P.ConnLow, c.P2P.ConnHigh = 256, 1024
		c.P2P.AutoNAT, c.P2P.NATService, c.P2P.RelayService = true, true, true
		c.P2P.Reachability = "public" // see NATConfig.Reachability
	default:
		return nil, fmt.Errorf("unknown profile %q (want one of %v)", profile, Profiles)
	}
	return c, nil
}

// Validate checks every field. Errors are *KeyError naming the key.
func (c *Config) Validate() error {
	if !slices.Contains(Profiles, c.Profile) {
		return &KeyError{Key: "profile", Err: fmt.Errorf("unknown profile %q (want one of %v)", c.Profile, Profiles)}
	}
	if c.Role != RoleNode && c.Role != RoleBootstrap {
		return &KeyError{Key: "role", Err: fmt.Errorf("unknown role %q (want node or bootstrap)", c.Role)}
	}
	if c.SpecFile == "" {
		return &KeyError{Key: "spec_file", Err: errors.New("must name the network spec file")}
	}
	if c.MemoryLimitMiB < 0 || c.MemoryLimitMiB > maxMemoryLimitMiB {
		return &KeyError{Key: "memory_limit_mib", Err: fmt.Errorf("%d: want at least 0 (none) and at most %d", c.MemoryLimitMiB, maxMemoryLimitMiB)}
	}
	if err := c.P2P.validate(); err != nil {
		return prefixKey("p2p", err)
	}
	if _, _, err := net.SplitHostPort(c.API.Listen); err != nil {
		return &KeyError{Key: "api.listen", Err: fmt.Errorf("want host:port: %w", err)}
	}
	if c.Log.Format != "text" && c.Log.Format != "json" {
		return &KeyError{Key: "log.format", Err: fmt.Errorf("unknown format %q (want text or json)", c.Log.Format)}
	}
	if !slices.Contains([]string{"debug", "info", "warn", "error"}, c.Log.Level) {
		return &KeyError{Key: "log.level", Err: fmt.Errorf("unknown level %q (want debug, info, warn or error)", c.Log.Level)}
	}
	if err := c.Attest.validate(); err != nil {
		return prefixKey("attest", err)
	}
	if err := c.Training.validate(); err != nil {
		return prefixKey("training", err)
	}
	return nil
}

func (p *P2PConfig) validate() error {
	if len(p.Listen) == 0 {
		return &KeyError{Key: "listen", Err: errors.New("needs at least one address")}
	}
	for i, a := range p.Listen {
		if err := checkListenAddr(a); err != nil {
			return &KeyError{Key: fmt.Sprintf("listen[%d]", i), Err: err}
		}
	}
	for i, a := range p.Announce {
		if err := checkListenAddr(a); err != nil {
			return &KeyError{Key: fmt.Sprintf("announce[%d]", i), Err: err}
		}
	}
	for i, a := range p.Bootstrap {
		if err := checkPeerAddr(a); err != nil {
			return &KeyError{Key: fmt.Sprintf("bootstrap[%d]", i), Err: err}
		}
	}
	if !slices.Contains([]string{"server", "client", "auto"}, p.DHTMode) {
		return &KeyError{Key: "dht_mode", Err: fmt.Errorf("unknown mode %q (want server, client or auto)", p.DHTMode)}
	}
	if p.ConnLow <= 0 || p.ConnHigh < p.ConnLow {
		return &KeyError{Key: "conn_high", Err: fmt.Errorf("want 0 < conn_low (%d) <= conn_high (%d)", p.ConnLow, p.ConnHigh)}
	}
	if p.ForwardHoldMS > maxForwardHoldMS {
		return &KeyError{Key: "forward_hold_ms", Err: fmt.Errorf("%d: at most %d (a forward a peer needs waits this long at every hop)", p.ForwardHoldMS, maxForwardHoldMS)}
	}
	return p.NATConfig.validate()
}
