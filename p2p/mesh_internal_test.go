package p2p

import (
	"context"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
)

func TestMeshTracerFollowsGraftPruneAndDeparture(t *testing.T) {
	tr := newMeshTracer()
	const topic = "t"
	if _, ok := tr.size(topic); ok {
		t.Fatal("a topic never joined has a known mesh")
	}
	tr.Join(topic)
	tr.Graft("a", topic)
	tr.Graft("b", topic)
	tr.Graft("a", topic)
	if n, ok := tr.size(topic); n != 2 || !ok {
		t.Fatalf("after grafting a and b: %d %v", n, ok)
	}
	tr.Prune("a", topic)
	tr.OnClosedOutboundStream("b")
	if n, _ := tr.size(topic); n != 0 {
		t.Fatalf("after a pruned and b gone: %d", n)
	}
	tr.Graft("c", topic)
	tr.Leave(topic)
	if n, ok := tr.size(topic); n != 0 || ok {
		t.Fatalf("after leaving: %d %v", n, ok)
	}
}

func TestMeshTracerSeesGossipsubFormItsMesh(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const topic = "lowband/test/mesh/1"
	var hosts []host.Host
	var tracers []*meshTracer
	for range 2 {
		h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.DisableMetrics())
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		tr := newMeshTracer()
		ps, err := pubsub.NewGossipSub(ctx, h, pubsub.WithRawTracer(tr))
		if err != nil {
			t.Fatal(err)
		}
		top, err := ps.Join(topic)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := top.Subscribe(); err != nil {
			t.Fatal(err)
		}
		hosts, tracers = append(hosts, h), append(tracers, tr)
	}
	if err := hosts[0].Connect(ctx, peer.AddrInfo{ID: hosts[1].ID(), Addrs: hosts[1].Addrs()}); err != nil {
		t.Fatal(err)
	}
	for {
		n0, _ := tracers[0].size(topic)
		n1, _ := tracers[1].size(topic)
		if n0 == 1 && n1 == 1 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("mesh never formed: sizes %d and %d", n0, n1)
		case <-time.After(20 * time.Millisecond):
		}
	}
	hosts[1].Close()
	for n, _ := tracers[0].size(topic); n != 0; n, _ = tracers[0].size(topic) {
		select {
		case <-ctx.Done():
			t.Fatalf("the closed peer stays in the mesh: size %d", n)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
