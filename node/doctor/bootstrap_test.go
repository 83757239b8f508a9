package doctor

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/p2p"
)

// fakeProber answers each peer with a fixed result; unknown peers do not answer.
type fakeProber map[peer.ID]p2p.ProbeResult

func (f fakeProber) Probe(_ context.Context, ai peer.AddrInfo, _ protocol.ID) p2p.ProbeResult {
	if r, ok := f[ai.ID]; ok {
		return r
	}
	return p2p.ProbeResult{Stage: p2p.StageDial, Took: 3 * time.Second, Err: errors.New("dial tcp4 127.0.0.1:4001: connect: connection refused\n  * more")}
}

// Clock: no peer of a fakeProber answers the time protocol.
func (f fakeProber) Clock(context.Context, peer.AddrInfo, protocol.ID) p2p.ClockResult {
	return p2p.ClockResult{Err: errors.New("protocols not supported")}
}

func newID(t *testing.T) peer.ID {
	t.Helper()
	_, pub, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func addrOf(id peer.ID) string { return "/ip4/127.0.0.1/tcp/4001/p2p/" + id.String() }

func bootstrapWith(t *testing.T, addrs ...string) (*configs.Config, *configs.Spec) {
	t.Helper()
	c, s := loaded(t, newHome(t))
	s.Bootstrap, c.P2P.Bootstrap = nil, addrs
	return c, s
}

func TestBootstrapProbes(t *testing.T) {
	ctx := context.Background()
	live, wrongNet, dead := newID(t), newID(t), newID(t)
	pr := fakeProber{
		live:     {Stage: p2p.StageDone, Addr: "/ip4/127.0.0.1/tcp/4001", Took: 23 * time.Millisecond, Agent: "lowband/v1"},
		wrongNet: {Stage: p2p.StageProtocol, Addr: "/ip4/127.0.0.1/tcp/4001", Took: 5 * time.Millisecond, Err: errors.New("protocols not supported")},
	}
	c, s := bootstrapWith(t, addrOf(live), addrOf(wrongNet), addrOf(dead))
	rs := Bootstrap(ctx, c, s, "", pr, time.Second)
	if len(rs) != 3 {
		t.Fatalf("want a line per bootstrap peer: %+v", rs)
	}
	want(t, "live", rs[0], OK, live.String(), "23ms", "/lowband/"+s.NetworkID()+"/kad/1.0.0", "lowband/v1")
	want(t, "another network", rs[1], Fail, "does not speak", "same network.toml")
	want(t, "dead while another answers", rs[2], Warn, "no connection after 3s", "connection refused * more", "firewall")

	c, s = bootstrapWith(t, addrOf(dead), addrOf(newID(t)))
	for i, r := range Bootstrap(ctx, c, s, "", pr, time.Second) {
		want(t, "every bootstrap peer dead", r, Fail, "no connection")
		if strings.Contains(r.Detail, "\n") {
			t.Errorf("line %d spans lines: %q", i, r.Detail)
		}
	}
}

func TestBootstrapListProblems(t *testing.T) {
	ctx := context.Background()
	self := newID(t)
	c, s := bootstrapWith(t, addrOf(self), "/ip4/127.0.0.1/tcp/4001", "garbage")
	rs := Bootstrap(ctx, c, s, self, fakeProber{}, time.Second)
	want(t, "self", rs[0], Skip, "this node itself")
	want(t, "no /p2p", rs[1], Fail, "needs /p2p/PEERID", "lowband bootstrap rm")
	want(t, "not a multiaddr", rs[2], Fail, "not a multiaddr")

	c, s = bootstrapWith(t)
	want(t, "none", Bootstrap(ctx, c, s, "", fakeProber{}, time.Second)[0], Warn, "no bootstrap peer", "lowband bootstrap add")
	c.Role = configs.RoleBootstrap
	want(t, "none on a bootstrap node", Bootstrap(ctx, c, s, "", fakeProber{}, time.Second)[0], OK, "where others start")
}
