package p2p

import (
	"context"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus"
)

// TestReachabilityMetricWithAutoNATv2: with AutoNAT v2, the NAT service, hole punching
// and the relay client on, the host still reports AutoNAT's verdict as
// libp2p_autonat_reachability_status, what lowband doctor reads (0 unknown, 1 public,
// 2 private; on loopback it stays unknown).
func TestReachabilityMetricWithAutoNATv2(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	reg := prometheus.NewRegistry()
	relay := startRelay(ctx, t, DefaultRelayLimits)
	startHost(ctx, t, func(c *Config) {
		c.AutoNAT, c.NATService, c.HolePunching, c.RelayClient = true, true, true, true
		c.Bootstrap, c.Registerer = []peer.AddrInfo{relay.AddrInfo()}, reg
	})
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "libp2p_autonat_reachability_status" {
			if v := f.GetMetric()[0].GetGauge().GetValue(); v != 0 {
				t.Fatalf("reachability %v on loopback, want 0 (unknown)", v)
			}
			return
		}
	}
	t.Fatal("no libp2p_autonat_reachability_status metric")
}
