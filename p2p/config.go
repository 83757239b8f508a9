package p2p

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/connmgr"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus"
)

// DHT modes.
const (
	DHTServer = "server" // always answer DHT queries (bootstrap and local profiles)
	DHTClient = "client" // never answer
	DHTAuto   = "auto"   // answer unless AutoNAT finds the host unreachable (kad-dht's auto-server mode)
)

// Config is everything New needs. The zero values of the optional fields pick defaults.
type Config struct {
	Identity crypto.PrivKey // the host's key (Ed25519); required
	Listen   []string       // multiaddrs to listen on; required
	Announce []string       // multiaddrs to announce instead of the listen addresses; empty = listen addresses
	// PublicOnly keeps every address others cannot dial over the internet (loopback,
	// private, link-local, unspecified) out of what the host announces (Addrs, identify,
	// its signed peer record, DHT records), drops such addresses from what the DHT learns
	// of others, and admits to the routing table only peers with a public address, as
	// kad-dht's public (WAN) filters do. Announce addresses are announced as given.
	PublicOnly bool

	Network string // network ID (from the network spec's hash); required
	Run     string // run ID; required

	Bootstrap []peer.AddrInfo // bootstrap peers
	Cached    []peer.AddrInfo // peers seen in the last run, tried alongside the bootstrap peers

	DHTMode           string // DHTServer, DHTClient or DHTAuto; empty = DHTServer
	ConnLow, ConnHigh int    // connection manager watermarks; 0 = 64 and 192
	ColocationPenalty bool   // gossipsub IP-colocation penalty; false for local swarms on 127.0.0.1
	// PeerExchange turns on gossipsub peer exchange and relays every joined topic:
	// what a bootstrap node does.
	PeerExchange bool

	// Getting through NAT (nat.go). AutoNAT v2 asks peers to dial each of the host's
	// addresses back (and answers theirs); NATService answers AutoNAT v1's probes, which
	// decide the host's reachability (DHT auto mode, the relay client and service go by
	// it); HolePunching upgrades a relayed connection to a direct one (DCUtR);
	// RelayClient reserves a slot on the Bootstrap peers while the host is unreachable
	// and announces /p2p-circuit addresses through them; RelayService (nil = off) relays
	// for others within its limits, once the host is found reachable.
	AutoNAT, NATService, HolePunching, RelayClient bool
	RelayService                                   *RelayLimits
	// ForceReachability, when set (ReachabilityPublic or ReachabilityPrivate), takes the
	// place of AutoNAT's verdict: the relay client and service act on it at once. For
	// tests on loopback, where AutoNAT cannot tell.
	ForceReachability string

	Topics []string // kinds to join (see Kinds)
	// Validators holds the validator of each kind in Topics; a kind without one is
	// refused (ErrNoValidator). Each is in place before its topic is joined, so no
	// message is handled unchecked. SetValidator replaces one later.
	Validators map[string]Validator
	AppScore   func(peer.ID) float64 // gossipsub application score; nil = 0; see SetAppScore
	// Gater, if set, decides which connections the host may open and accept (tests cut
	// a host off the network with p2ptest.Gate).
	Gater connmgr.ConnectionGater

	// ForwardHold is how long at most an accepted gossip message of at least HoldFrom
	// bytes from a peer waits, counted from when its check began, before it is forwarded
	// and delivered: long enough for the IDONTWANTs of the neighbours that got the same
	// message from its publisher meanwhile to arrive, so that it is not sent again to
	// them; it goes sooner once every peer of the mesh holds it (see gossip.go).
	// 0 = DefaultForwardHold; negative = no hold.
	ForwardHold time.Duration
	// HoldWhole holds every message the whole ForwardHold, never less: for tests of the
	// hold's bounds.
	HoldWhole bool

	// StreamTimeout bounds one request/response exchange when the caller's context
	// has no earlier deadline; 0 = 30s.
	StreamTimeout time.Duration
	// RetryMin is the first wait before retrying unreachable bootstrap peers; it
	// doubles up to RetryMax. 0 = 1s and 1 minute.
	RetryMin, RetryMax time.Duration

	Logger     *slog.Logger          // nil = slog.Default()
	Registerer prometheus.Registerer // nil = no metrics

	// Libp2p, when set, is the libp2p host to run on instead of one New builds: for
	// swarms on an in-memory network (go-libp2p's mocknet) in tests and benchmarks.
	// Identity, Listen, Announce and PublicOnly are then ignored, the given host's
	// connection and resource managers apply instead of ConnLow and ConnHigh's, and Close
	// closes the host. Wire bytes are then counted on the streams of the protocols the
	// host serves and opens (DHT, gossip, fetches: payload bytes, without libp2p's own
	// protocols and with no security or muxer overhead on an in-memory network).
	Libp2p host.Host
	// Link, with Libp2p only, emulates the host's home link on it: an uplink shared by
	// all its streams and a one-way latency (LinkShape). The zero value shapes nothing.
	Link LinkShape
	// Wire, when set, is where the host breaks down what it sends and receives
	// (WireStats): for benchmarks.
	Wire *WireStats
}

// validate checks the required fields and fills the defaults of the optional ones.
func (c *Config) validate() error {
	if c.Identity == nil && c.Libp2p == nil {
		return errors.New("p2p config: no identity key")
	}
	if len(c.Listen) == 0 && c.Libp2p == nil {
		return errors.New("p2p config: no listen address")
	}
	if c.Network == "" || c.Run == "" {
		return errors.New("p2p config: network and run are required")
	}
	if c.DHTMode == "" {
		c.DHTMode = DHTServer
	}
	if !slices.Contains([]string{DHTServer, DHTClient, DHTAuto}, c.DHTMode) {
		return fmt.Errorf("p2p config: unknown DHT mode %q (want server, client or auto)", c.DHTMode)
	}
	for _, k := range c.Topics {
		if !slices.Contains(Kinds, k) {
			return fmt.Errorf("p2p config: unknown topic kind %q (want one of %v)", k, Kinds)
		}
		if c.Validators[k] == nil {
			return fmt.Errorf("p2p config: %s topic: %w", k, ErrNoValidator)
		}
	}
	if c.ConnLow == 0 && c.ConnHigh == 0 {
		c.ConnLow, c.ConnHigh = 64, 192
	}
	if c.ConnLow <= 0 || c.ConnHigh < c.ConnLow {
		return fmt.Errorf("p2p config: want 0 < conn low (%d) <= conn high (%d)", c.ConnLow, c.ConnHigh)
	}
	if !slices.Contains([]string{"", ReachabilityPublic, ReachabilityPrivate}, c.ForceReachability) {
		return fmt.Errorf("p2p config: unknown reachability %q (want public or private)", c.ForceReachability)
	}
	if c.RelayService != nil {
		if err := c.RelayService.validate(); err != nil {
			return err
		}
	}
	switch {
	case c.ForwardHold == 0:
		c.ForwardHold = DefaultForwardHold
	case c.ForwardHold < 0:
		c.ForwardHold = 0
	}
	if c.StreamTimeout <= 0 {
		c.StreamTimeout = 30 * time.Second
	}
	if c.RetryMin <= 0 {
		c.RetryMin = time.Second
	}
	if c.RetryMax < c.RetryMin {
		c.RetryMax = max(time.Minute, c.RetryMin)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}
