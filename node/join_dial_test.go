package node

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/p2p/p2ptest"
)

// connectedAnswering answers a committed-record request with the record of the peer
// asked, but only while the asking host is connected to it: as on a real network, a node
// asks the peers it can reach.
type connectedAnswering struct {
	host    *p2p.Host
	records map[peer.ID][]byte
}

func (a *connectedAnswering) Request(ctx context.Context, to peer.ID, _ string, _ []byte, _ int) ([]byte, error) {
	if !slices.Contains(a.host.ConnectedPeers(), to) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return a.records[to], nil
}

// votersApart starts n staker hosts and a joiner host (returned last) that knows only the
// bootstrap node, waits until the stakers are advertised in the rendezvous, and cuts the
// joiner off from them. A connection low watermark of 1 keeps every host's discovery from
// dialing anyone past the bootstrap node, and as DHT clients they are in no routing
// table, so that no DHT query connects them either.
func votersApart(t *testing.T, ctx context.Context, n int) (*p2p.Host, []crypto.PrivKey, []peer.ID) {
	t.Helper()
	keys := make([]crypto.PrivKey, n)
	ids := make([]peer.ID, n)
	for i := range keys {
		keys[i] = p2ptest.Key()
		ids[i], _ = peer.IDFromPrivateKey(keys[i])
	}
	sw, err := p2ptest.StartOn(ctx, "tcp", n+1, func(i int, c *p2p.Config) {
		if i >= 0 {
			c.ConnLow, c.ConnHigh, c.DHTMode = 1, 100, p2p.DHTClient
		}
		if i >= 0 && i < n {
			c.Identity = keys[i]
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sw.Close() })
	h := sw.Hosts[n]
	if err := p2ptest.Poll(ctx, "the stakers advertised", 100*time.Millisecond, func() bool {
		found, err := h.LookupRendezvous(ctx)
		return err == nil && len(slices.DeleteFunc(found, func(ai peer.AddrInfo) bool { return !slices.Contains(ids, ai.ID) })) == n
	}); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids { // the DHT's own queries may have dialed them
		_ = h.ClosePeer(id)
	}
	if c := h.ConnectedPeers(); slices.ContainsFunc(ids, func(id peer.ID) bool { return slices.Contains(c, id) }) {
		t.Fatalf("the joiner is still connected to a staker: %v", c)
	}
	return h, keys, ids
}

// TestJoinDialsTheVotersItIsNotConnectedTo: a node joining a run whose connections carry
// none of the genesis stake (in a large swarm a node holds a few dozen connections, which
// may carry less than half of it) dials the genesis voters the rendezvous names between
// asks, and finds the head their majority reached. Without the dials it waited its whole
// wait and started at genesis, past which its peers had long gone.
func TestJoinDialsTheVotersItIsNotConnectedTo(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	h, keys, ids := votersApart(t, ctx, 3)
	fake := &connectedAnswering{host: h, records: map[peer.ID][]byte{}}
	for i, k := range keys {
		sr, err := incentives.SignCommitted(k, p2ptest.Network, p2ptest.Run, headRecord(5))
		if err != nil {
			t.Fatal(err)
		}
		fake.records[ids[i]] = sr.Marshal()
	}
	j := &joiner{
		n:       &Node{host: h, log: slog.New(slog.DiscardHandler)},
		fetch:   &fetchClient{host: fake, proto: "fetch", maxShard: 1 << 20, timeout: time.Second},
		rep:     &replayer{network: p2ptest.Network, run: p2ptest.Run},
		trust:   stakeLedger(t, ids, 1000, 1000, 1000),
		stakers: map[peer.ID]bool{ids[0]: true, ids[1]: true, ids[2]: true},
	}
	never := func(asked, none []peer.ID) bool { return false }
	head, past := j.wantRounds(ctx, never, 15*time.Second)
	if !past || head != 5 {
		t.Fatalf("head %d (past genesis: %v), want round 5, which every staker closed", head, past)
	}
}

// TestConnectVotersDialsOnlyWhatTheAsksNeed: the voters are dialed most power first, and
// only until those connected carry more than three quarters of the voting power (the
// margin the asks keep): of stakes 4000, 3000, 2000 and 1000, the first three. Dialing
// every voter cost a swarm starting at once N² dials.
func TestConnectVotersDialsOnlyWhatTheAsksNeed(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	h, _, ids := votersApart(t, ctx, 4)
	j := &joiner{n: &Node{host: h, log: slog.New(slog.DiscardHandler)}}
	j.connectVoters(ctx, stakeLedger(t, ids, 4000, 3000, 2000, 1000))
	c := h.ConnectedPeers()
	for i, want := range []bool{true, true, true, false} {
		if got := slices.Contains(c, ids[i]); got != want {
			t.Fatalf("staker %d (stake %d) connected: %v, want %v", i, 4000-1000*i, got, want)
		}
	}
}
