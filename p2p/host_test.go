package p2p_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/p2p/p2ptest"
)

// pair starts two hosts, b bootstrapping from a, and waits until they are connected.
func pair(t *testing.T, ctx context.Context) (a, b *p2p.Host) {
	t.Helper()
	s, err := p2ptest.Start(ctx, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	a, b = s.Boot, s.Hosts[0]
	if err := p2ptest.Poll(ctx, "connection", 10*time.Millisecond, func() bool { return len(a.Peers()) > 0 }); err != nil {
		t.Fatal(err)
	}
	return a, b
}

func TestNames(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{string(p2p.DHTPrefix("testnet-1a2b")), "/lowband/testnet-1a2b"},
		{p2p.TopicName("testnet-1a2b", "r1", p2p.KindShards), "lowband/testnet-1a2b/r1/shards/1"},
		{string(p2p.FetchProtocol("testnet-1a2b")), "/lowband/testnet-1a2b/fetch/1.0.0"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	if p2p.MaxMessageSize >= 1<<20 {
		t.Errorf("MaxMessageSize %d is not under gossipsub's 1 MiB", p2p.MaxMessageSize)
	}
}

func TestConfigErrors(t *testing.T) {
	ctx := context.Background()
	for name, mutate := range map[string]func(*p2p.Config){
		"no key":       func(c *p2p.Config) { c.Identity = nil },
		"no listen":    func(c *p2p.Config) { c.Listen = nil },
		"bad listen":   func(c *p2p.Config) { c.Listen = []string{"127.0.0.1:4001"} },
		"bad announce": func(c *p2p.Config) { c.Announce = []string{"nope"} },
		"no network":   func(c *p2p.Config) { c.Network = "" },
		"bad mode":     func(c *p2p.Config) { c.DHTMode = "maybe" },
		"bad kind":     func(c *p2p.Config) { c.Topics = []string{"blocks"} },
		"bad conns":    func(c *p2p.Config) { c.ConnLow, c.ConnHigh = 10, 5 },
		"no validator": func(c *p2p.Config) { delete(c.Validators, p2p.KindAttest) },
	} {
		c := p2ptest.Config(p2ptest.Key())
		mutate(&c)
		if h, err := p2p.New(ctx, c); err == nil {
			_ = h.Close()
			t.Errorf("%s: New succeeded", name)
		}
	}
}

func TestSetValidatorNilRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, _ := pair(t, ctx)
	if err := a.SetValidator(p2p.KindShards, nil); !errors.Is(err, p2p.ErrNoValidator) {
		t.Fatalf("nil validator: got %v, want ErrNoValidator", err)
	}
}

func TestPublishCap(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, b := pair(t, ctx)
	err := a.Publish(ctx, p2p.KindShards, make([]byte, p2p.MaxMessageSize+1))
	if !errors.Is(err, p2p.ErrMessageTooLarge) {
		t.Fatalf("oversized publish: got %v, want ErrMessageTooLarge", err)
	}
	if err := a.Publish(ctx, "blocks", []byte("x")); !errors.Is(err, p2p.ErrUnknownTopic) {
		t.Fatalf("unknown topic: got %v, want ErrUnknownTopic", err)
	}
	// A message of exactly the cap still fits gossipsub's frame and arrives.
	sub, err := b.Subscribe(p2p.KindShards)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Cancel()
	own, err := a.Subscribe(p2p.KindShards)
	if err != nil {
		t.Fatal(err)
	}
	defer own.Cancel()
	if err := p2ptest.Poll(ctx, "topic peer", 10*time.Millisecond, func() bool {
		return len(a.TopicPeers(p2p.KindShards)) == 1
	}); err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte{7}, p2p.MaxMessageSize)
	if err := a.Publish(ctx, p2p.KindShards, big); err != nil {
		t.Fatal(err)
	}
	m, err := sub.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(m.Data, big) || m.ReceivedFrom != a.ID() || m.Local {
		t.Fatalf("got %d bytes from %s (local %v), want %d from %s", len(m.Data), m.ReceivedFrom, m.Local, len(big), a.ID())
	}
	if m, err := own.Next(ctx); err != nil || !m.Local || !bytes.Equal(m.Data, big) {
		t.Fatalf("publisher's own subscription: got %v, want its message marked local", err)
	}
}

func TestValidatorReject(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, b := pair(t, ctx)
	seen := make(chan string, 4)
	err := b.SetValidator(p2p.KindEvidence, func(_ context.Context, _ peer.ID, data []byte) p2p.Result {
		seen <- string(data)
		if strings.HasPrefix(string(data), "bad") {
			return p2p.Reject
		}
		return p2p.Accept
	})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := b.Subscribe(p2p.KindEvidence)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Cancel()
	if err := p2ptest.Poll(ctx, "topic peer", 10*time.Millisecond, func() bool {
		return len(a.TopicPeers(p2p.KindEvidence)) == 1
	}); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"bad one", "good one"} {
		if err := a.Publish(ctx, p2p.KindEvidence, []byte(d)); err != nil {
			t.Fatal(err)
		}
	}
	m, err := sub.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Data) != "good one" {
		t.Fatalf("subscriber got %q, want only the accepted message", m.Data)
	}
	// Validation runs concurrently: the rejected message may be checked after the
	// accepted one was delivered, but both are checked.
	for range 2 {
		select {
		case d := <-seen:
			if d != "bad one" && d != "good one" {
				t.Fatalf("validator saw %q", d)
			}
		case <-ctx.Done():
			t.Fatal("validator did not see both messages")
		}
	}
}

func TestRequestResponse(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, b := pair(t, ctx)
	proto := string(p2p.FetchProtocol(p2ptest.Network))
	a.Handle(proto, 16, func(ctx context.Context, from peer.ID, req []byte) ([]byte, error) {
		switch string(req) {
		case "fail":
			return nil, errors.New("no such object")
		case "slow":
			<-ctx.Done()
			return nil, ctx.Err()
		case "big":
			return make([]byte, 101), nil
		}
		if from != b.ID() {
			return nil, errors.New("wrong peer")
		}
		return append([]byte("re:"), req...), nil
	})
	resp, err := b.Request(ctx, a.ID(), proto, []byte("cid1"), 100)
	if err != nil || string(resp) != "re:cid1" {
		t.Fatalf("request: got %q, %v", resp, err)
	}
	if _, err := b.Request(ctx, a.ID(), proto, []byte("big"), 100); !errors.Is(err, p2p.ErrResponseTooLarge) {
		t.Errorf("oversized response: got %v, want ErrResponseTooLarge", err)
	}
	// A failing handler and an oversized request both reset the stream.
	if resp, err := b.Request(ctx, a.ID(), proto, []byte("fail"), 100); !errors.Is(err, network.ErrReset) {
		t.Errorf("handler error: got %q, %v, want a reset", resp, err)
	}
	if resp, err := b.Request(ctx, a.ID(), proto, bytes.Repeat([]byte("x"), 17), 100); !errors.Is(err, network.ErrReset) {
		t.Errorf("oversized request: got %q, %v, want a reset", resp, err)
	}
	short, cancelShort := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancelShort()
	if _, err := b.Request(short, a.ID(), proto, []byte("slow"), 100); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("slow handler: got %v, want the deadline", err)
	}
	if _, err := b.Request(ctx, a.ID(), "/lowband/other/1.0.0", nil, 100); err == nil {
		t.Error("unknown protocol: want an error")
	}
}

// TestBootstrapUnreachable starts a host whose only bootstrap and cached peers are
// down, checks that it keeps retrying and says what it tried, then brings the
// bootstrap peer up on its old address and checks that the host joins it.
func TestBootstrapUnreachable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	bootKey := p2ptest.Key()
	port := freePort(t)
	bootCfg := p2ptest.Config(bootKey)
	bootCfg.Listen = []string{"/ip4/127.0.0.1/tcp/" + port}
	bootID, err := peer.IDFromPrivateKey(bootKey)
	if err != nil {
		t.Fatal(err)
	}
	cachedID, err := peer.IDFromPrivateKey(p2ptest.Key())
	if err != nil {
		t.Fatal(err)
	}
	rec := &p2ptest.LogRecorder{}
	cfg := p2ptest.Config(p2ptest.Key())
	cfg.Logger = rec.Logger()
	cfg.RetryMin, cfg.RetryMax = 20*time.Millisecond, 100*time.Millisecond
	cfg.Bootstrap = []peer.AddrInfo{{ID: bootID, Addrs: []ma.Multiaddr{ma.StringCast("/ip4/127.0.0.1/tcp/" + port)}}}
	cfg.Cached = []peer.AddrInfo{{ID: cachedID, Addrs: []ma.Multiaddr{ma.StringCast("/ip4/127.0.0.1/tcp/" + freePort(t))}}}
	h, err := p2p.New(ctx, cfg)
	if err != nil {
		t.Fatalf("New with unreachable bootstrap: %v", err)
	}
	defer h.Close()
	if err := p2ptest.Poll(ctx, "three failed rounds", 10*time.Millisecond, func() bool {
		return h.FailedBootstrapRounds() >= 3
	}); err != nil {
		t.Fatal(err)
	}
	const line = "no bootstrap peer answered; tried 1 bootstrap and 1 cached peers; retrying in"
	if n := rec.Count(line); n < 3 {
		t.Fatalf("logged %d lines with %q, want >= 3; log: %q", n, line, rec.Messages())
	}
	boot, err := p2p.New(ctx, bootCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer boot.Close()
	if err := p2ptest.Poll(ctx, "host to join the bootstrap", 10*time.Millisecond, func() bool {
		return len(h.Peers()) == 1 && h.Peers()[0].ID == bootID
	}); err != nil {
		t.Fatal(err)
	}
	// h's routing table was empty until now, so it could not advertise; its
	// advertise loop retries on a short, growing wait (not the discovery
	// library's two minutes), so the bootstrap soon finds it under the
	// rendezvous string.
	if err := p2ptest.Poll(ctx, "h in the rendezvous", 20*time.Millisecond, func() bool {
		return advertised(ctx, boot, h)
	}); err != nil {
		t.Fatal(err)
	}
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, port, err := net.SplitHostPort(l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return port
}

func TestDHTModes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, mode := range []string{p2p.DHTClient, p2p.DHTAuto} {
		s, err := p2ptest.Start(ctx, 1, func(i int, c *p2p.Config) {
			if i == 0 {
				c.DHTMode = mode
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		boot, h := s.Boot, s.Hosts[0]
		// A client joins the bootstrap's table only if it serves the DHT: in
		// client mode it never does; auto starts as a server on loopback.
		err = p2ptest.Poll(ctx, "tables", 10*time.Millisecond, func() bool {
			return h.RoutingTableSize() == 1 && (mode == p2p.DHTClient || boot.RoutingTableSize() == 1)
		})
		if err == nil && mode == p2p.DHTClient && boot.RoutingTableSize() != 0 {
			err = errors.New("bootstrap holds a DHT client in its table")
		}
		_ = s.Close()
		if err != nil {
			t.Fatalf("%s mode: %v", mode, err)
		}
	}
}
