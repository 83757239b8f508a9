package p2p_test

import (
	"context"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/host"

	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/p2p/p2ptest"
)

// TestAuthoredMessageDropped: messages on lowband's topics carry no author. A message
// published with a gossipsub author and signature is dropped; the same kind of host
// publishing without one is heard.
func TestAuthoredMessageDropped(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := p2ptest.Start(ctx, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	receiver := s.Boot
	sub, err := receiver.Subscribe(p2p.KindShards)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Cancel()
	name := p2p.TopicName(p2ptest.Network, p2ptest.Run, p2p.KindShards)
	signed := rawPublisher(t, ctx, receiver, name)
	unsigned := rawPublisher(t, ctx, receiver, name, pubsub.WithMessageSignaturePolicy(pubsub.StrictNoSign), pubsub.WithNoAuthor(),
		pubsub.WithMessageIdFn(func(m *pb.Message) string { return p2p.MessageID(m.GetData()) }))
	if err := signed.Publish(ctx, []byte("with an author")); err != nil {
		t.Fatal(err)
	}
	if err := unsigned.Publish(ctx, []byte("without an author")); err != nil {
		t.Fatal(err)
	}
	m, err := sub.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Data) != "without an author" {
		t.Fatalf("got %q, want only the message without an author", m.Data)
	}
	wctx, wcancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer wcancel()
	if m, err := sub.Next(wctx); err == nil {
		t.Fatalf("got %q too", m.Data)
	}
}

// rawPublisher starts a plain libp2p host with gossipsub (opts), connects it to h and
// returns its handle on the topic once h sees it subscribed.
func rawPublisher(t *testing.T, ctx context.Context, h *p2p.Host, topic string, opts ...pubsub.Option) *pubsub.Topic {
	t.Helper()
	raw, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	opts = append(opts, pubsub.WithFloodPublish(true)) // straight to h, mesh or not
	ps, err := pubsub.NewGossipSub(ctx, raw, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := raw.Connect(ctx, h.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	top, err := ps.Join(topic)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := top.Subscribe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sub.Cancel)
	waitSubscribed(t, ctx, raw, h, top)
	return top
}

// waitSubscribed waits until raw and h see each other on the topic.
func waitSubscribed(t *testing.T, ctx context.Context, raw host.Host, h *p2p.Host, top *pubsub.Topic) {
	t.Helper()
	err := p2ptest.Poll(ctx, "topic peers", 10*time.Millisecond, func() bool {
		seen := false
		for _, p := range h.TopicPeers(p2p.KindShards) {
			seen = seen || p == raw.ID()
		}
		return seen && len(top.ListPeers()) > 0
	})
	if err != nil {
		t.Fatal(err)
	}
}
