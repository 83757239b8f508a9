package p2p

import (
	"slices"
	"strings"
	"testing"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/prometheus/client_golang/prometheus"
)

// TestGossipTracerLabelsStayBounded feeds the tracer events a peer can cause at will (a
// topic this host never joined, a reason pubsub may add later) and events of the host's
// own publishes: the first two land in the fixed "other" labels, the last is not counted.
func TestGossipTracerLabelsStayBounded(t *testing.T) {
	reg := prometheus.NewRegistry()
	tr, err := newGossipTracer("net", "run", Kinds, reg)
	if err != nil {
		t.Fatal(err)
	}
	msg := func(topic string, local bool) *pubsub.Message {
		return &pubsub.Message{Message: &pb.Message{Topic: &topic}, Local: local}
	}
	records := TopicName("net", "run", KindRecords)
	tr.DeliverMessage(msg(records, false))
	tr.DeliverMessage(msg(records, true))
	tr.DuplicateMessage(msg(records, false))
	tr.UndeliverableMessage(msg(records, false))
	tr.RejectMessage(msg(records, false), pubsub.RejectValidationQueueFull)
	tr.RejectMessage(msg("lowband/other-net/run/records/1", false), pubsub.RejectValidationFailed)
	tr.RejectMessage(msg(records, false), "a reason pubsub adds later")
	tr.Graft("p", records)
	tr.Prune("p", "some/topic")
	tr.DropRPC(nil, "p")
	got := gathered(t, reg)
	for _, c := range []struct {
		labels []string
		want   float64
	}{
		{[]string{KindRecords, "accept", ""}, 1},
		{[]string{KindRecords, "duplicate", ""}, 1},
		{[]string{KindRecords, "undeliverable", ""}, 1},
		{[]string{KindRecords, "ignore", "validation_queue_full"}, 1},
		{[]string{otherLabel, "reject", "validation_failed"}, 1},
		{[]string{KindRecords, "reject", otherLabel}, 1},
		{[]string{KindShards, "accept", ""}, 0},
	} {
		key := series(MetricGossipsubMessages, "kind="+c.labels[0], "result="+c.labels[1], "reason="+c.labels[2])
		if got[key] != c.want {
			t.Errorf("%s = %v, want %v", key, got[key], c.want)
		}
	}
	n := 0
	for k := range got {
		if strings.HasPrefix(k, MetricGossipsubMessages) {
			n++
		}
	}
	if n != len(Kinds)+5 {
		t.Errorf("%d series, want one accept per kind and the 5 others above: %v", n, got)
	}
	for _, k := range []string{
		series(MetricGossipsubMeshChanges, "kind="+KindRecords, "change=graft"),
		series(MetricGossipsubMeshChanges, "kind="+otherLabel, "change=prune"),
		series(MetricGossipsubDroppedRPCs),
	} {
		if got[k] != 1 {
			t.Errorf("%s = %v, want 1", k, got[k])
		}
	}
}

// series names one series: the metric and its label pairs, "name=value".
func series(name string, labels ...string) string {
	slices.Sort(labels)
	return name + "{" + strings.Join(labels, ",") + "}"
}

// gathered reads every counter of reg, keyed by series.
func gathered(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			out[series(mf.GetName(), labels...)] = m.GetCounter().GetValue()
		}
	}
	return out
}
