package node

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/control"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/p2p/p2ptest"
)

// TestBootstrapDropsJunk starts a bootstrap node between two hosts that are not
// connected to each other: junk published by one on the records topic must not reach
// the other through the bootstrap node, and the bootstrap node counts it by reason.
func TestBootstrapDropsJunk(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	home, c, s := newHome(t)
	boot, err := New(ctx, Options{Home: home, Config: c, Spec: s, Role: configs.RoleBootstrap, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer boot.Close()
	// A bootstrap node relays every topic but the shards: peer exchange needs one topic,
	// and on the shards topic every node's flood publish would send it each contribution.
	shards, records := p2p.TopicName(s.NetworkID(), s.Run, p2p.KindShards), p2p.TopicName(s.NetworkID(), s.Run, p2p.KindRecords)
	if ts := boot.host.Topics(); slices.Contains(ts, shards) || !slices.Contains(ts, records) || len(ts) != len(p2p.Kinds)-1 {
		t.Fatalf("a bootstrap node joined %v, want every topic but %s", ts, shards)
	}
	// Two DHT clients that stop looking for peers once they hold one: they reach each
	// other only through the bootstrap node.
	var hosts [2]*p2p.Host
	for i := range hosts {
		cfg := p2ptest.Config(p2ptest.Key())
		cfg.Network, cfg.Run = s.NetworkID(), s.Run
		cfg.Bootstrap = []peer.AddrInfo{boot.host.AddrInfo()}
		cfg.DHTMode, cfg.ConnLow, cfg.ConnHigh = p2p.DHTClient, 1, 8
		if hosts[i], err = p2p.New(ctx, cfg); err != nil {
			t.Fatal(err)
		}
		defer hosts[i].Close()
	}
	sender, receiver := hosts[0], hosts[1]
	sub, err := receiver.Subscribe(p2p.KindRecords)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Cancel()
	if err := p2ptest.Poll(ctx, "the bootstrap node relaying to the receiver", 10*time.Millisecond, func() bool {
		return slices.Contains(boot.host.TopicPeers(p2p.KindRecords), receiver.ID()) &&
			slices.Contains(sender.TopicPeers(p2p.KindRecords), boot.ID())
	}); err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 16)
	go func() {
		for {
			m, err := sub.Next(ctx)
			if err != nil {
				return
			}
			got <- m.Data
		}
	}()
	// First a well-formed signed record, until one arrives: the path through the
	// bootstrap node works once the mesh has formed.
	key := p2ptest.Key()
	for round := uint64(1); ; round++ {
		rec := incentives.Record{Version: incentives.RecordVersion, Round: round, PrevRoot: make([]byte, 32), NewRoot: make([]byte, 32)}
		sr, err := incentives.SignRecord(key, s.NetworkID(), s.Run, &rec)
		if err != nil {
			t.Fatal(err)
		}
		if err := sender.Publish(ctx, p2p.KindRecords, sr.Marshal()); err != nil {
			t.Fatal(err)
		}
		if receiveWithin(t, ctx, got, 100*time.Millisecond) != nil {
			break
		}
	}
	junk := "junk, not a record"
	if err := sender.Publish(ctx, p2p.KindRecords, []byte(junk)); err != nil {
		t.Fatal(err)
	}
	counted := `lowband_node_gossip_messages_total{kind="records",reason="decode",result="reject"} 1`
	for !strings.Contains(string(get(t, "http://"+boot.APIAddr()+"/metrics")), counted) {
		if d := receiveWithin(t, ctx, got, 20*time.Millisecond); string(d) == junk {
			t.Fatalf("the bootstrap node forwarded junk: the receiver got %q", d)
		}
	}
	if d := receiveWithin(t, ctx, got, 100*time.Millisecond); string(d) == junk {
		t.Fatalf("the bootstrap node forwarded junk: the receiver got %q", d)
	}
	if slices.Contains(sender.ConnectedPeers(), receiver.ID()) {
		t.Fatal("sender and receiver connected directly; the test proves nothing")
	}
}

// receiveWithin returns the next data from got, or nil after wait; it fails the test
// when ctx ends.
func receiveWithin(t *testing.T, ctx context.Context, got <-chan []byte, wait time.Duration) []byte {
	t.Helper()
	select {
	case d := <-got:
		return d
	case <-time.After(wait):
		return nil
	case <-ctx.Done():
		t.Fatal("test timed out")
		return nil
	}
}

// TestTwoNodesTrainOnlyThroughARelay: two training nodes behind "NATs" (reachability
// forced private, and a connection gater that refuses every direct connection but the
// relay's) know only a relay host, which runs the relay service with the bootstrap
// profile's limits, serves the DHT and joins no gossip topic. They reserve slots on it,
// find each other's /p2p-circuit addresses through its DHT and train over the circuit:
// each includes the other's contribution and they hold one state root, round after
// round. The relay's own counter of the bytes it carried gives the cost per round.
func TestTwoNodesTrainOnlyThroughARelay(t *testing.T) {
	const rounds = 3 // rounds both nodes close with both contributions, on one root
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	reg := prometheus.NewRegistry()
	var relay *p2p.Host
	var relayAddr string
	nodes, _, _ := startSwarmWith(t, ctx, 2, nil, func(_ int, o *Options) {
		if relay == nil {
			relay, relayAddr = startRelayHost(t, ctx, o.Spec, reg)
		}
		o.Config.P2P.Bootstrap = []string{relayAddr}
		o.Config.P2P.RelayClient = true
		o.reachability, o.gater = p2p.ReachabilityPrivate, relayOnly{relay.ID()}
	})
	a, b := nodes[0], nodes[1]
	var together []uint64
	if err := p2ptest.Poll(ctx, "rounds closed together through the relay", 50*time.Millisecond, func() bool {
		together = closedTogether(a, b)
		return len(together) >= rounds
	}); err != nil {
		t.Logf("a: %+v\nb: %+v", a.trainingStatus().Rounds, b.trainingStatus().Rounds)
		t.Fatal(err)
	}
	for _, pair := range [][2]*Node{{a, b}, {b, a}} {
		for _, p := range pair[0].host.Peers() {
			if p.ID != pair[1].ID() {
				continue
			}
			for _, addr := range p.Addrs {
				if !strings.Contains(addr, "/p2p-circuit") {
					t.Errorf("%s reaches %s directly at %s: the test proves nothing", pair[0].ID(), p.ID, addr)
				}
			}
		}
	}
	if len(relay.Topics()) != 0 {
		t.Fatalf("the relay joined %v: gossip may not have gone through the circuit", relay.Topics())
	}
	perRound, contribution := relayedPerRound(t, ctx, reg, a, b)
	t.Logf("rounds %v closed by both on one root; the relay carried %d bytes a round (both ways; %d-byte contributions), against go-libp2p's default circuit limit of %d bytes each way",
		together, perRound, contribution, 128<<10)
}

// closedTogether lists the rounds a and b both closed with both contributions included and
// the same state root.
func closedTogether(a, b *Node) []uint64 {
	byRound := map[uint64]RoundStatus{}
	for _, r := range a.trainingStatus().Rounds {
		byRound[r.Round] = r
	}
	var out []uint64
	for _, r := range b.trainingStatus().Rounds {
		ra, ok := byRound[r.Round]
		if ok && ra.StateRoot == r.StateRoot && len(r.Included) == 2 && slices.Equal(ra.Included, r.Included) {
			out = append(out, r.Round)
		}
	}
	return out
}

// relayedPerRound measures the bytes the relay carries over the next two rounds both nodes
// close, per round, and a contribution's size in them.
func relayedPerRound(t *testing.T, ctx context.Context, reg *prometheus.Registry, a, b *Node) (int64, int) {
	t.Helper()
	closed := func() uint64 { return min(headOf(a), headOf(b)) }
	from, start := closed(), relayedBytes(t, reg)
	if err := p2ptest.Poll(ctx, "two more rounds", 50*time.Millisecond, func() bool { return closed() >= from+2 }); err != nil {
		t.Fatal(err)
	}
	to, end := closed(), relayedBytes(t, reg)
	if end <= start {
		t.Fatalf("the relay carried %d bytes over rounds %d to %d", end-start, from+1, to)
	}
	rs := a.trainingStatus().Rounds
	return (end - start) / int64(to-from), rs[len(rs)-1].ContributionBytes
}

func headOf(n *Node) uint64 {
	rs := n.trainingStatus().Rounds
	if len(rs) == 0 {
		return 0
	}
	return rs[len(rs)-1].Round
}

// relayedBytes reads go-libp2p's relay service counter of the bytes it relayed.
func relayedBytes(t *testing.T, reg *prometheus.Registry) int64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "libp2p_relaysvc_data_transferred_bytes_total" {
			return int64(mf.GetMetric()[0].GetCounter().GetValue())
		}
	}
	return 0
}

// startRelayHost starts a relay on loopback for the spec's network: the relay service
// with a bootstrap node's limits, reachability forced public, a DHT server, no topic;
// and the address to reach it at.
func startRelayHost(t *testing.T, ctx context.Context, s *configs.Spec, reg prometheus.Registerer) (*p2p.Host, string) {
	t.Helper()
	cfg := p2ptest.Config(p2ptest.Key())
	cfg.Network, cfg.Run = s.NetworkID(), s.Run
	cfg.Topics, cfg.Validators = nil, nil
	limits := p2p.DefaultRelayLimits
	cfg.RelayService, cfg.ForceReachability, cfg.Registerer = &limits, p2p.ReachabilityPublic, reg
	// go-libp2p's relay client builds /p2p-circuit addresses only on a relay's public
	// addresses: the relay announces a name (reserved, it resolves nowhere), which the
	// nodes, connected to the relay on loopback already, never dial.
	cfg.Announce = []string{"/dns4/relay.lowband.example/tcp/4001"}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Listen = []string{fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", ln.Addr().(*net.TCPAddr).Port)}
	ln.Close()
	h, err := p2p.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h, fmt.Sprintf("%s/p2p/%s", cfg.Listen[0], h.ID())
}

// relayOnly is a connection gater that lets a node connect directly to its relay only:
// every other connection goes through /p2p-circuit, as for a node behind a NAT nobody
// can dial and no hole punch gets through.
type relayOnly struct{ relay peer.ID }

func (g relayOnly) allow(p peer.ID, a ma.Multiaddr) bool {
	_, err := a.ValueForProtocol(ma.P_CIRCUIT)
	return p == g.relay || err == nil
}

func (relayOnly) InterceptPeerDial(peer.ID) bool                     { return true }
func (g relayOnly) InterceptAddrDial(p peer.ID, a ma.Multiaddr) bool { return g.allow(p, a) }
func (relayOnly) InterceptAccept(network.ConnMultiaddrs) bool        { return true }
func (g relayOnly) InterceptSecured(_ network.Direction, p peer.ID, c network.ConnMultiaddrs) bool {
	return g.allow(p, c.RemoteMultiaddr())
}
func (relayOnly) InterceptUpgraded(network.Conn) (bool, control.DisconnectReason) { return true, 0 }
