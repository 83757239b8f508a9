package p2p_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/p2p/p2ptest"
)

// TestHostExportsPeersTableAndWireBytes checks that a host with a registry serves its
// connected peers, its DHT routing table size and its wire bytes, read when scraped: once
// it has joined a bootstrap host, each is above zero.
func TestHostExportsPeersTableAndWireBytes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	reg := prometheus.NewRegistry()
	s, err := p2ptest.Start(ctx, 1, func(i int, c *p2p.Config) {
		if i == 0 {
			c.Registerer = reg
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	names := []string{"lowband_p2p_peers", "lowband_p2p_routing_table_peers", "lowband_p2p_wire_sent_bytes_total", "lowband_p2p_wire_received_bytes_total"}
	values := func() map[string]float64 {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		for _, mf := range mfs {
			if _, ok := out[mf.GetName()]; !ok {
				out[mf.GetName()] = 0
			}
			for _, m := range mf.GetMetric() {
				out[mf.GetName()] += m.GetGauge().GetValue() + m.GetCounter().GetValue()
			}
		}
		return out
	}
	if err := p2ptest.Poll(ctx, "peers, table and wire bytes", 20*time.Millisecond, func() bool {
		got := values()
		for _, n := range names {
			if got[n] <= 0 {
				return false
			}
		}
		return true
	}); err != nil {
		got := values()
		for _, n := range names {
			t.Errorf("%s = %v", n, got[n])
		}
		t.Fatal(err)
	}
	if _, ok := values()["lowband_p2p_stale_reconnects_total"]; !ok {
		t.Error("lowband_p2p_stale_reconnects_total is not exported")
	}
}
