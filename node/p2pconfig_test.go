package node

import (
	"log/slog"
	"testing"
	"time"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/p2p/p2ptest"
)

// TestPublicOnlyFromConfigReachesTheHost: config.toml's p2p.public_only is what the
// libp2p host is started with.
func TestPublicOnlyFromConfigReachesTheHost(t *testing.T) {
	h, c, s := newHome(t)
	for _, want := range []bool{true, false} {
		c.P2P.PublicOnly = want
		n := &Node{opts: Options{Home: h, Config: c, Spec: s}, log: slog.New(slog.DiscardHandler)}
		pc, err := n.p2pConfig(p2ptest.Key(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if pc.PublicOnly != want {
			t.Errorf("p2p.public_only = %v: host config PublicOnly = %v", want, pc.PublicOnly)
		}
	}
}

// TestNATFromConfigReachesTheHost: config.toml's NAT keys are what the libp2p host is
// started with: relay limits on a relay service, none without.
func TestNATFromConfigReachesTheHost(t *testing.T) {
	h, c, s := newHome(t)
	c.P2P.AutoNAT, c.P2P.NATService, c.P2P.HolePunching, c.P2P.RelayClient = true, true, true, true
	c.P2P.RelayService, c.P2P.RelayReservations, c.P2P.RelayCircuits = true, 3, 5
	c.P2P.RelayCircuitSeconds, c.P2P.RelayCircuitBytes = 60, 1<<20
	n := &Node{opts: Options{Home: h, Config: c, Spec: s}, log: slog.New(slog.DiscardHandler)}
	pc, err := n.p2pConfig(p2ptest.Key(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := p2p.RelayLimits{Reservations: 3, Circuits: 5, Duration: time.Minute, Data: 1 << 20}
	if !pc.AutoNAT || !pc.NATService || !pc.HolePunching || !pc.RelayClient || pc.RelayService == nil || *pc.RelayService != want {
		t.Errorf("host config: autonat %v nat service %v hole punching %v relay client %v relay service %+v, want all on and %+v",
			pc.AutoNAT, pc.NATService, pc.HolePunching, pc.RelayClient, pc.RelayService, want)
	}
	c.P2P.NATConfig = configs.NATConfig{RelayReservations: 1, RelayCircuits: 1}
	if pc, err = n.p2pConfig(p2ptest.Key(), nil); err != nil || pc.AutoNAT || pc.NATService || pc.HolePunching || pc.RelayClient || pc.RelayService != nil {
		t.Errorf("all off: %+v (err %v)", pc, err)
	}
}

// TestReachabilityFromConfigReachesTheHost: config.toml's p2p.reachability is what the
// host forces in place of AutoNAT's verdict; a test's option takes precedence.
func TestReachabilityFromConfigReachesTheHost(t *testing.T) {
	h, c, s := newHome(t)
	c.P2P.Reachability = p2p.ReachabilityPublic
	n := &Node{opts: Options{Home: h, Config: c, Spec: s}, log: slog.New(slog.DiscardHandler)}
	if pc, err := n.p2pConfig(p2ptest.Key(), nil); err != nil || pc.ForceReachability != p2p.ReachabilityPublic {
		t.Errorf("p2p.reachability = public: host forces %q (err %v)", pc.ForceReachability, err)
	}
	n.opts.reachability = p2p.ReachabilityPrivate
	if pc, err := n.p2pConfig(p2ptest.Key(), nil); err != nil || pc.ForceReachability != p2p.ReachabilityPrivate {
		t.Errorf("option private over config public: host forces %q (err %v)", pc.ForceReachability, err)
	}
}

// TestForwardHoldFromConfigReachesTheHost: config.toml's p2p.forward_hold_ms is the host's
// ForwardHold: 0 leaves the host's default, a negative value turns the hold off.
func TestForwardHoldFromConfigReachesTheHost(t *testing.T) {
	h, c, s := newHome(t)
	for ms, want := range map[int]time.Duration{0: 0, 500: 500 * time.Millisecond, -1: -1, -300: -1} {
		c.P2P.ForwardHoldMS = ms
		n := &Node{opts: Options{Home: h, Config: c, Spec: s}, log: slog.New(slog.DiscardHandler)}
		pc, err := n.p2pConfig(p2ptest.Key(), nil)
		if err != nil || pc.ForwardHold != want {
			t.Errorf("p2p.forward_hold_ms = %d: host ForwardHold %v (err %v), want %v", ms, pc.ForwardHold, err, want)
		}
	}
}
