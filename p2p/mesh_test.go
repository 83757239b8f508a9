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
