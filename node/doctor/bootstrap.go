package doctor

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/p2p"
)

// Prober is what Bootstrap and ClockSkew need of p2p.Prober: dial a peer and negotiate a
// protocol; ask a peer its time.
type Prober interface {
	Probe(ctx context.Context, ai peer.AddrInfo, proto protocol.ID) p2p.ProbeResult
	Clock(ctx context.Context, ai peer.AddrInfo, proto protocol.ID) p2p.ClockResult
}

var _ Prober = (*p2p.Prober)(nil)

// Bootstrap probes each bootstrap peer of the spec and the config, in parallel, each
// within timeout: a dial, then the network's DHT protocol. A dead peer is a failure
// when no bootstrap peer answers, else a warning. self (may be empty) is this node's ID,
// which is not probed.
func Bootstrap(ctx context.Context, c *configs.Config, s *configs.Spec, self peer.ID, pr Prober, timeout time.Duration) []Result {
	addrs := dedup(append(append([]string{}, s.Bootstrap...), c.P2P.Bootstrap...))
	if len(addrs) == 0 {
		if c.Role == configs.RoleBootstrap {
			return []Result{ok("bootstrap", "none configured: as a bootstrap node, this one is where others start")}
		}
		return []Result{warn("bootstrap", "no bootstrap peer in the network spec or config.toml: only peers that already know this node can find it",
			"add one: lowband bootstrap add /ip4/ADDR/tcp/PORT/p2p/PEERID")}
	}
	proto := p2p.DHTProtocol(s.NetworkID())
	out := make([]Result, len(addrs))
	var wg sync.WaitGroup
	for i, a := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = probeOne(ctx, a, self, pr, proto, timeout)
		}()
	}
	wg.Wait()
	answered := false
	for _, r := range out {
		answered = answered || r.Level == OK
	}
	for i, r := range out {
		if answered && r.Level == Fail && strings.Contains(r.Detail, ": no connection after ") {
			out[i].Level = Warn
		}
	}
	return out
}

func probeOne(ctx context.Context, addr string, self peer.ID, pr Prober, proto protocol.ID, timeout time.Duration) Result {
	const check = "bootstrap"
	m, err := ma.NewMultiaddr(addr)
	if err != nil {
		return fail(check, addr+" is not a multiaddr: "+err.Error(), "fix or remove it: lowband bootstrap rm ADDR")
	}
	ai, err := peer.AddrInfoFromP2pAddr(m)
	if err != nil {
		return fail(check, addr+" is not a peer address (it needs /p2p/PEERID): "+err.Error(), "fix or remove it: lowband bootstrap rm ADDR")
	}
	if ai.ID == self {
		return skip(check, "%s: this node itself", addr)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	r := pr.Probe(ctx, *ai, proto)
	took := r.Took.Round(time.Millisecond)
	switch r.Stage {
	case p2p.StageDone:
		agent := ""
		if r.Agent != "" {
			agent = ", agent " + r.Agent
		}
		return ok(check, "%s: answered in %s at %s, speaks %s%s", ai.ID, took, r.Addr, proto, agent)
	case p2p.StageProtocol:
		return fail(check, fmt.Sprintf("%s: connected in %s at %s, but it does not speak %s: %s", ai.ID, took, r.Addr, proto, oneLine(r.Err)),
			"it is not a DHT server of this network: check that it runs with the same network.toml, or remove it")
	}
	return fail(check, fmt.Sprintf("%s: no connection after %s: %s", addr, took, oneLine(r.Err)),
		"check the address and that the peer runs; check that this machine may dial out (firewall); the node keeps retrying and also uses peers.json")
}

// oneLine flattens an error (libp2p's dial errors span lines) and keeps it short.
func oneLine(err error) string {
	if err == nil {
		return "no error"
	}
	s := strings.Join(strings.Fields(err.Error()), " ")
	if len(s) > 240 {
		s = s[:240] + "..."
	}
	return s
}

func dedup(ss []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
