package p2p

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/connmgr"
	"github.com/libp2p/go-libp2p/core/crypto"
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

	Topics []string // kinds to join (see Kinds)
	// Validators holds the validator of each kind in Topics; a kind without one is
	// refused (ErrNoValidator). Each is in place before its topic is joined, so no
	// message is handled unchecked. SetValidator replaces one later.
	Validators map[string]Validator
	AppScore   func(peer.ID) float64 // gossipsub application score; nil = 0; see SetAppScore
	// Gater, if set, decides which connections the host may open and accept (tests cut
	// a host off the network with p2ptest.Gate).
	Gater connmgr.ConnectionGater

	// StreamTimeout bounds one request/response exchange when the caller's context
	// has no earlier deadline; 0 = 30s.
	StreamTimeout time.Duration
	// RetryMin is the first wait before retrying unreachable bootstrap peers; it
	// doubles up to RetryMax. 0 = 1s and 1 minute.
	RetryMin, RetryMax time.Duration

	Logger     *slog.Logger          // nil = slog.Default()
	Registerer prometheus.Registerer // nil = no metrics
}

// validate checks the required fields and fills the defaults of the optional ones.
func (c *Config) validate() error {
	if c.Identity == nil {
		return errors.New("p2p config: no identity key")
	}
	if len(c.Listen) == 0 {
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
