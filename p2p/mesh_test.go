package p2p_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/p2p/p2ptest"
)

func TestTopicPeersExportedPerKind(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
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
	peersOn := func() map[string]float64 {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		for _, mf := range mfs {
			if mf.GetName() != p2p.MetricTopicPeers {
				continue
			}
			for _, m := range mf.GetMetric() {
				out[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
			}
		}
		return out
	}
	if err := p2ptest.Poll(ctx, "topic peers", 20*time.Millisecond, func() bool {
		got := peersOn()
		for _, k := range p2p.Kinds {
			if got[k] != 1 {
				return false
			}
		}
		return true
	}); err != nil {
		t.Fatalf("%v: %s by kind: %v", err, p2p.MetricTopicPeers, peersOn())
	}
}

// TestMeshPeersReportedOnceSubscribed checks that gossipsub reports its mesh to the host:
// hosts that subscribe to a topic see each other in their mesh of it, and a topic nobody
// subscribed to has no mesh size to report.
func TestMeshPeersReportedOnceSubscribed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := p2ptest.Start(ctx, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, h := range s.All() {
		sub, err := h.Subscribe(p2p.KindRecords)
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Cancel()
	}
	a := s.Hosts[0]
	if err := p2ptest.Poll(ctx, "a mesh on the records topic", 20*time.Millisecond, func() bool {
		n, ok := a.MeshPeers(p2p.KindRecords)
		return ok && n >= 1
	}); err != nil {
		t.Fatal(err)
	}
	if n, ok := a.MeshPeers(p2p.KindEvidence); ok && n != 0 {
		t.Fatalf("mesh of a topic nobody subscribed to: %d peers", n)
	}
}
