package p2p_test

import (
	"context"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/p2p/p2ptest"
)

// gossipsubCounts reads lowband_p2p_gossipsub_messages_total from reg, keyed
// "kind/result/reason".
func gossipsubCounts(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != p2p.MetricGossipsubMessages {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			out[l["kind"]+"/"+l["result"]+"/"+l["reason"]] += m.GetCounter().GetValue()
		}
	}
	return out
}

// TestGossipsubCountsAcceptRejectIgnoreByTopicAndReason has a bootstrap host publish
// three records: one the receiving host's validator accepts, one it rejects and one it
// ignores. Gossipsub's own trace events, counted on the receiver, say so per topic kind,
// result and pubsub's reason.
func TestGossipsubCountsAcceptRejectIgnoreByTopicAndReason(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reg := prometheus.NewRegistry()
	s, err := p2ptest.Start(ctx, 1, func(i int, c *p2p.Config) {
		if i != 0 {
			return
		}
		c.Registerer = reg
		c.Validators = p2ptest.AcceptAll()
		c.Validators[p2p.KindRecords] = func(_ context.Context, _ peer.ID, data []byte) p2p.Result {
			return map[string]p2p.Result{"good": p2p.Accept, "bad": p2p.Reject, "later": p2p.Ignore}[string(data)]
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	boot, h := s.Boot, s.Hosts[0]
	sub, err := h.Subscribe(p2p.KindRecords)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Cancel()
	if err := p2ptest.Poll(ctx, "the receiver on the records topic", 10*time.Millisecond, func() bool {
		return len(boot.TopicPeers(p2p.KindRecords)) == 1
	}); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"good", "bad", "later"} {
		if err := boot.Publish(ctx, p2p.KindRecords, []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]float64{
		"records/accept/":                   1,
		"records/reject/validation_failed":  1,
		"records/ignore/validation_ignored": 1,
	}
	if err := p2ptest.Poll(ctx, "the three verdicts counted", 10*time.Millisecond, func() bool {
		got := gossipsubCounts(t, reg)
		for k, v := range want {
			if got[k] != v {
				return false
			}
		}
		return true
	}); err != nil {
		t.Fatalf("%v: got %v, want %v", err, gossipsubCounts(t, reg), want)
	}
}
