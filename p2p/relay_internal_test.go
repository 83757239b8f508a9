package p2p

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/control"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/client"
	pbv2 "github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/pb"
	"github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/proto"
	ma "github.com/multiformats/go-multiaddr"
)

// shardSize is about the size of one compressed shard on the wire.
const shardSize = 6 << 10

// TestGossipFlowsThroughRelayBeyondDefaultLimits: a host forced private, that refuses
// every direct connection but its relay's, reserves a slot on a bootstrap host running
// the relay service with DefaultRelayLimits; another host reaches it through
// /p2p-circuit, and shard-sized gossip flows both ways over the relayed connection,
// more bytes each way than go-libp2p's default per-circuit limit (128 KiB) lets through.
func TestGossipFlowsThroughRelayBeyondDefaultLimits(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	relay, private, public, subs := relayedPair(ctx, t, DefaultRelayLimits)
	const n = 24 // 24 x 6 KiB = 144 KiB each way
	start := time.Now()
	for i := range n {
		for j, from := range []*Host{private, public} {
			msg := bytes.Repeat([]byte{byte(j)}, shardSize)
			copy(msg, fmt.Sprintf("%d/%d", j, i))
			if err := from.Publish(ctx, KindShards, msg); err != nil {
				t.Fatal(err)
			}
			got, err := nextRemote(ctx, subs[1-j])
			if err != nil {
				t.Fatalf("message %d from %s: %v", i, from.ID(), err)
			}
			if !bytes.Equal(got.Data, msg) || got.ReceivedFrom != from.ID() {
				t.Fatalf("message %d from %s: got other bytes", i, from.ID())
			}
		}
	}
	took := time.Since(start)
	conns := public.h.Network().ConnsToPeer(private.ID())
	if len(conns) == 0 {
		t.Fatal("no connection to the private host")
	}
	for _, c := range conns {
		if !isRelayed(c.RemoteMultiaddr()) || c.Stat().Limited {
			t.Fatalf("connection %s: limited %v, want relayed and unlimited", c.RemoteMultiaddr(), c.Stat().Limited)
		}
	}
	var in int64
	min := int64(2 * n * shardSize)
	// libp2p's byte counters are brought up to date about once a second.
	if !pollUntil(ctx, func() bool {
		in = 0
		for _, p := range []protocol.ID{proto.ProtoIDv2Hop, proto.ProtoIDv2Stop} {
			in += relay.bw.GetBandwidthForProtocol(p).TotalIn
		}
		return in >= min
	}) {
		t.Fatalf("relay received %d bytes on circuits, want at least %d", in, min)
	}
	t.Logf("%d messages of %d bytes each way through the relay in %v; relay received %d bytes on circuits",
		n, shardSize, took.Round(time.Millisecond), in)
}

// TestRelayWithDefaultLimitsCarriesNoGossip: with go-libp2p's default per-circuit
// limits (2 minutes, 128 KiB) the relayed connection is a limited one, over which
// gossipsub opens no stream: the hosts never see each other on a topic. This is why
// DefaultRelayLimits sets no per-circuit limit.
func TestRelayWithDefaultLimitsCarriesNoGossip(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	limits := RelayLimits{Reservations: 128, Circuits: 16, Duration: 2 * time.Minute, Data: 128 << 10}
	_, private, public, _ := relayedPair(ctx, t, limits)
	for _, c := range public.h.Network().ConnsToPeer(private.ID()) {
		if !c.Stat().Limited {
			t.Fatalf("connection %s not limited", c.RemoteMultiaddr())
		}
	}
	wait, stop := context.WithTimeout(ctx, 2*time.Second)
	defer stop()
	if pollUntil(wait, func() bool { return slices.Contains(public.TopicPeers(KindShards), private.ID()) }) {
		t.Fatal("hosts became topic peers over a limited circuit")
	}
}

// TestRelayRefusesReservationsBeyondLimit: a relay host allowing one reservation
// refuses the second client.
func TestRelayRefusesReservationsBeyondLimit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	relay := startRelay(ctx, t, RelayLimits{Reservations: 1, Circuits: 1})
	var errs []error
	for range 2 {
		c := startHost(ctx, t, func(*Config) {})
		_, err := client.Reserve(ctx, c.h, relay.AddrInfo())
		errs = append(errs, err)
	}
	if errs[0] != nil {
		t.Fatalf("first reservation: %v", errs[0])
	}
	var re client.ReservationError
	if !errors.As(errs[1], &re) || re.Status != pbv2.Status_RESERVATION_REFUSED {
		t.Fatalf("second reservation: %v, want refused", errs[1])
	}
}

// relayedPair starts a relay host with limits, a host forced private that reserves a
// slot on it and refuses any direct connection but the relay's, and a public host that
// connects to the private one through /p2p-circuit. Both subscribe to the shards topic; the relay
// joins none, so their gossip can only go over the circuit.
func relayedPair(ctx context.Context, t *testing.T, limits RelayLimits) (relay, private, public *Host, subs [2]*Subscription) {
	t.Helper()
	relay = startRelay(ctx, t, limits)
	boot := []peer.AddrInfo{relay.AddrInfo()}
	private = startHost(ctx, t, func(c *Config) {
		c.Bootstrap, c.RelayClient, c.Topics = boot, true, Kinds
		c.ForceReachability, c.Gater = ReachabilityPrivate, relayOnly{relay.ID()}
	})
	if !pollUntil(ctx, func() bool {
		ti := relay.h.ConnManager().GetTagInfo(private.ID())
		return ti != nil && ti.Tags["relay-reservation"] > 0
	}) {
		t.Fatal("no reservation on the relay")
	}
	public = startHost(ctx, t, func(c *Config) { c.Bootstrap, c.Topics = boot, Kinds })
	circuit := ma.Join(relay.Addrs()[0], ma.StringCast("/p2p/"+relay.ID().String()+"/p2p-circuit"))
	subs = [2]*Subscription{subscribe(t, private), subscribe(t, public)}
	if err := public.h.Connect(ctx, peer.AddrInfo{ID: private.ID(), Addrs: []ma.Multiaddr{circuit}}); err != nil {
		t.Fatalf("connecting through the relay: %v", err)
	}
	if limits.Duration == 0 && !pollUntil(ctx, func() bool {
		return slices.Contains(public.TopicPeers(KindShards), private.ID()) &&
			slices.Contains(private.TopicPeers(KindShards), public.ID())
	}) {
		t.Fatal("hosts never saw each other on the shards topic")
	}
	return relay, private, public, subs
}

func startRelay(ctx context.Context, t *testing.T, limits RelayLimits) *Host {
	return startHost(ctx, t, func(c *Config) {
		c.RelayService, c.NATService = &limits, true
		c.ForceReachability = ReachabilityPublic
	})
}

// startHost starts a host on loopback TCP, DHT server, no topics unless mutate sets some.
func startHost(ctx context.Context, t *testing.T, mutate func(*Config)) *Host {
	t.Helper()
	key, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Identity: key, Listen: []string{"/ip4/127.0.0.1/tcp/0"}, Network: "test-0000", Run: "run-0",
		Validators: acceptAll(), RetryMin: 100 * time.Millisecond, RetryMax: time.Second,
		Logger: slog.New(slog.DiscardHandler)}
	mutate(&cfg)
	h, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h
}

func acceptAll() map[string]Validator {
	m := make(map[string]Validator, len(Kinds))
	for _, k := range Kinds {
		m[k] = func(context.Context, peer.ID, []byte) Result { return Accept }
	}
	return m
}

func subscribe(t *testing.T, h *Host) *Subscription {
	t.Helper()
	s, err := h.Subscribe(KindShards)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Cancel)
	return s
}

// nextRemote returns the next message of s another host published.
func nextRemote(ctx context.Context, s *Subscription) (*Message, error) {
	for {
		m, err := s.Next(ctx)
		if err != nil || !m.Local {
			return m, err
		}
	}
}

// pollUntil checks cond every 20 ms until it holds (true) or ctx ends (false).
func pollUntil(ctx context.Context, cond func() bool) bool {
	for {
		if cond() {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// relayOnly is a connection gater that lets a host connect directly to its relay only:
// every other connection must go through /p2p-circuit, as for a host behind a NAT that
// nobody can dial and that cannot punch a hole.
type relayOnly struct{ relay peer.ID }

func (g relayOnly) allow(p peer.ID, a ma.Multiaddr) bool { return p == g.relay || isRelayed(a) }

func (relayOnly) InterceptPeerDial(peer.ID) bool                     { return true }
func (g relayOnly) InterceptAddrDial(p peer.ID, a ma.Multiaddr) bool { return g.allow(p, a) }
func (relayOnly) InterceptAccept(network.ConnMultiaddrs) bool        { return true }
func (g relayOnly) InterceptSecured(_ network.Direction, p peer.ID, c network.ConnMultiaddrs) bool {
	return g.allow(p, c.RemoteMultiaddr())
}
func (relayOnly) InterceptUpgraded(network.Conn) (bool, control.DisconnectReason) { return true, 0 }
