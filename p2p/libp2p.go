package p2p

import (
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	lpmetrics "github.com/libp2p/go-libp2p/core/metrics"
	"github.com/libp2p/go-libp2p/core/network"
	rcmgr "github.com/libp2p/go-libp2p/p2p/host/resource-manager"
	"github.com/libp2p/go-libp2p/p2p/muxer/yamux"
	"github.com/libp2p/go-libp2p/p2p/net/connmgr"
	"github.com/libp2p/go-libp2p/p2p/security/noise"
	quic "github.com/libp2p/go-libp2p/p2p/transport/quic"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"
	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"

	"github.com/lowband/lowband/version"
)

// newLibp2p builds the libp2p host: TCP and QUIC, Noise, yamux, a connection
// manager, a resource manager scaled to the machine, and bw counting every byte.
func newLibp2p(cfg *Config, bw lpmetrics.Reporter) (host.Host, error) {
	announce, err := parseAddrs(cfg.Announce)
	if err != nil {
		return nil, fmt.Errorf("announce address: %w", err)
	}
	listen, err := parseAddrs(cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen address: %w", err)
	}
	cm, err := connmgr.NewConnManager(cfg.ConnLow, cfg.ConnHigh, connmgr.WithGracePeriod(time.Minute))
	if err != nil {
		return nil, fmt.Errorf("connection manager: %w", err)
	}
	rm, err := newResourceManager(cfg.ConnHigh, cfg.Registerer != nil)
	if err != nil {
		return nil, fmt.Errorf("resource manager: %w", err)
	}
	opts := []libp2p.Option{
		libp2p.Identity(cfg.Identity),
		libp2p.UserAgent(version.Agent()), // identify's agent version: lowband/<version>
		libp2p.ListenAddrs(listen...),
		libp2p.Transport(tcp.NewTCPTransport),
		libp2p.Transport(quic.NewTransport),
		libp2p.Security(noise.ID, noise.New),
		libp2p.Muxer(yamux.ID, yamux.DefaultTransport),
		libp2p.ConnectionManager(cm),
		libp2p.ResourceManager(rm),
		libp2p.BandwidthReporter(bw),
	}
	if cfg.Gater != nil {
		opts = append(opts, libp2p.ConnectionGater(cfg.Gater))
	}
	if f := addrsFactory(announce, cfg.PublicOnly); f != nil {
		opts = append(opts, libp2p.AddrsFactory(f))
	}
	if cfg.DHTMode == DHTServer && !allLoopback(listen) {
		// Public DHT servers answer the reachability probes that let auto-mode peers
		// find out whether they can serve the DHT themselves.
		opts = append(opts, libp2p.EnableNATService())
	}
	if cfg.Registerer != nil {
		opts = append(opts, libp2p.PrometheusRegisterer(cfg.Registerer))
	} else {
		opts = append(opts, libp2p.DisableMetrics())
	}
	h, err := libp2p.New(opts...)
	if err != nil {
		rm.Close()
		return nil, fmt.Errorf("starting libp2p host: %w", err)
	}
	return h, nil
}

// newResourceManager scales go-libp2p's default limits to this machine's memory
// and file descriptors, and makes sure the connection limits sit above the
// connection manager's high watermark. Loopback connections are not limited per
// IP, so a local swarm of many hosts in one process fits. With metrics on, it
// reports its usage to go-libp2p's resource manager metrics.
func newResourceManager(connHigh int, withMetrics bool) (network.ResourceManager, error) {
	limits := rcmgr.DefaultLimits
	libp2p.SetDefaultServiceLimits(&limits)
	concrete := limits.AutoScale()
	scaled := concrete.ToPartialLimitConfig()
	floor := rcmgr.LimitVal(2 * connHigh)
	raise := func(v *rcmgr.LimitVal) {
		if *v != rcmgr.Unlimited && *v < floor {
			*v = floor
		}
	}
	raise(&scaled.System.Conns)
	raise(&scaled.System.ConnsInbound)
	raise(&scaled.System.ConnsOutbound)
	raise(&scaled.Transient.Conns)
	raise(&scaled.Transient.ConnsInbound)
	raise(&scaled.Transient.ConnsOutbound)
	opt := rcmgr.WithMetricsDisabled()
	if withMetrics {
		str, err := rcmgr.NewStatsTraceReporter()
		if err != nil {
			return nil, err
		}
		opt = rcmgr.WithTraceReporter(str)
	}
	return rcmgr.NewResourceManager(rcmgr.NewFixedLimiter(scaled.Build(concrete)), opt)
}

func parseAddrs(ss []string) ([]ma.Multiaddr, error) {
	out := make([]ma.Multiaddr, 0, len(ss))
	for _, s := range ss {
		a, err := ma.NewMultiaddr(s)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", s, err)
		}
		out = append(out, a)
	}
	return out, nil
}

func allLoopback(addrs []ma.Multiaddr) bool {
	for _, a := range addrs {
		if !manet.IsIPLoopback(a) {
			return false
		}
	}
	return true
}
