package p2p

import (
	"errors"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/p2p/host/autorelay"
	relayv2 "github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/relay"
)

// Reachabilities Config.ForceReachability may force.
const (
	ReachabilityPublic  = "public"
	ReachabilityPrivate = "private"
)

// RelayLimits bound the circuit relay v2 service a host offers (Config.RelayService).
//
// A circuit with a per-circuit limit (Duration and Data set) is a "limited" connection
// to go-libp2p: neither gossipsub nor the DHT opens a stream over it, so it serves only
// to punch a hole through the NAT (DCUtR). A node behind a NAT that hole punching cannot
// cross joins the mesh only through circuits without that limit (Duration and Data 0):
// then the relay is bounded by the number of reservations, the circuits per peer, and
// the resource manager's limits of the relay service.
type RelayLimits struct {
	Reservations int           // reservations held at once (one per peer behind NAT)
	Circuits     int           // circuits open at once per peer
	Duration     time.Duration // per circuit; 0 with Data 0 = no per-circuit limit
	Data         int64         // bytes per circuit and direction; 0 with Duration 0 = no limit
}

// DefaultRelayLimits are those of a bootstrap node: 128 reservations, 16 circuits per
// peer (a gossip mesh of at most 12 peers, the DHT and fetches), no per-circuit limit.
var DefaultRelayLimits = RelayLimits{Reservations: 128, Circuits: 16}

func (l *RelayLimits) validate() error {
	if l.Reservations <= 0 || l.Circuits <= 0 {
		return errors.New("p2p config: relay service: want reservations and circuits > 0")
	}
	if l.Duration < 0 || l.Data < 0 || (l.Duration == 0) != (l.Data == 0) {
		return errors.New("p2p config: relay service: want duration and data both 0 (no per-circuit limit) or both > 0")
	}
	return nil
}

// resources are the relay service's resources: go-libp2p's defaults with l's limits.
func (l *RelayLimits) resources() relayv2.Resources {
	rc := relayv2.DefaultResources()
	rc.MaxReservations = l.Reservations
	rc.MaxCircuits = l.Circuits
	rc.Limit = nil
	if l.Duration > 0 {
		rc.Limit = &relayv2.RelayLimit{Duration: l.Duration, Data: l.Data}
	}
	return rc
}

// natOptions are the libp2p options of cfg's NAT settings: AutoNAT v2, the AutoNAT
// (v1) service, hole punching, the relay client with the bootstrap peers as its
// relays, and the relay service. libp2p's relay transport (dialling /p2p-circuit
// addresses) is on whatever they say.
func natOptions(cfg *Config) []libp2p.Option {
	var opts []libp2p.Option
	if cfg.AutoNAT {
		opts = append(opts, libp2p.EnableAutoNATv2())
	}
	if cfg.NATService {
		opts = append(opts, libp2p.EnableNATService())
	}
	if cfg.HolePunching {
		opts = append(opts, libp2p.EnableHolePunching())
	}
	if cfg.RelayClient && len(cfg.Bootstrap) > 0 {
		// Reserve as soon as one bootstrap peer answers, not after go-libp2p's wait
		// for a candidate per relay, and on two of them (go-libp2p's usual number),
		// not on every bootstrap peer.
		opts = append(opts, libp2p.EnableAutoRelayWithStaticRelays(cfg.Bootstrap,
			autorelay.WithMinCandidates(1), autorelay.WithNumRelays(min(2, len(cfg.Bootstrap)))))
	}
	if cfg.RelayService != nil {
		ropts := []relayv2.Option{relayv2.WithResources(cfg.RelayService.resources())}
		if cfg.Registerer != nil { // libp2p_relaysvc_*: reservations, circuits, bytes relayed
			ropts = append(ropts, relayv2.WithMetricsTracer(relayv2.NewMetricsTracer(relayv2.WithRegisterer(cfg.Registerer))))
		}
		opts = append(opts, libp2p.EnableRelayService(ropts...))
	}
	switch cfg.ForceReachability {
	case ReachabilityPublic:
		opts = append(opts, libp2p.ForceReachabilityPublic())
	case ReachabilityPrivate:
		opts = append(opts, libp2p.ForceReachabilityPrivate())
	}
	return opts
}
