package doctor

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/p2p"
)

// startGrace is how long after its start a node's empty tables are "still starting".
const startGrace = 30 * time.Second

// NodeRunning reports whether this home's node is running. run is nil when it is not;
// why says what the API client found (no api.addr, or no answer).
func NodeRunning(h configs.Home, run *Running, why error) Result {
	const check = "node"
	if run == nil {
		detail := "not running"
		if why != nil {
			detail += " (" + oneLine(why) + ")"
		}
		return warn(check, detail+": the DHT, gossip and reachability checks need a running node",
			"start it (lowband run --home "+h.Dir+") and run doctor again")
	}
	st := run.Status
	up := (time.Duration(st.UptimeSeconds) * time.Second).String()
	return ok(check, "running as %s: role %s, version %s, up %s, %d peers connected", st.PeerID, st.Role, st.Version, up, st.ConnectedPeers)
}

// DHT checks that the running node's DHT routing table has peers: past its first
// seconds, an empty one fails (the node is alone, or its peers are on another network),
// except on a bootstrap node, which may be the network's first.
func DHT(run *Running) Result {
	const check = "dht"
	if run == nil {
		return skip(check, "not checked: no node is running")
	}
	st := run.Status
	switch {
	case st.DHTTableSize > 0:
		return ok(check, "%d peers in the routing table", st.DHTTableSize)
	case time.Duration(st.UptimeSeconds*float64(time.Second)) < startGrace:
		return warn(check, fmt.Sprintf("routing table empty so far (up %.0fs)", st.UptimeSeconds), "run doctor again in a minute")
	case st.ConnectedPeers > 0:
		return fail(check, fmt.Sprintf("connected to %d peers, but the routing table is empty: none of them serves this network's DHT", st.ConnectedPeers),
			"check the bootstrap lines above: a bootstrap peer must run with the same network.toml")
	case st.Role == configs.RoleBootstrap:
		return warn(check, "routing table empty and no peer connected: this bootstrap node is alone",
			"a network's first bootstrap node waits for others to dial it; if nodes are running, check that they can reach its address")
	}
	return fail(check, "routing table empty and no peer connected: the node is alone and cannot train",
		"see the bootstrap lines above; the node keeps retrying its bootstrap and cached peers")
}

// Gossip checks each topic kind of the running node: peers on the topic and, where the
// node reports it, its gossipsub mesh.
func Gossip(run *Running) []Result {
	if run == nil {
		return []Result{skip("gossip", "not checked: no node is running")}
	}
	if len(run.Status.Topics) == 0 {
		return []Result{warn("gossip", "the node has joined no topic", "check the node's log for errors at start")}
	}
	topicPeers := metricValues(run.Metrics, p2p.MetricTopicPeers)
	mesh := metricValues(run.Metrics, p2p.MetricMeshPeers)
	var out []Result
	for _, kind := range p2p.Kinds {
		if kind == p2p.KindShards && run.Status.Role == configs.RoleBootstrap {
			out = append(out, ok("gossip "+kind, "not joined: a bootstrap node does not take the nodes' contributions"))
			continue
		}
		out = append(out, gossipKind(kind, topicPeers, mesh))
	}
	return out
}

func gossipKind(kind string, topicPeers, mesh map[string]float64) Result {
	check := "gossip " + kind
	label := `kind="` + kind + `"`
	on, onKnown := topicPeers[label]
	m, meshKnown := mesh[label]
	switch {
	case !onKnown:
		return skip(check, "not checked: the node does not report its topics' peers")
	case meshKnown && m > 0:
		return ok(check, "%.0f peers in the mesh, %.0f on the topic", m, on)
	case on == 0:
		return warn(check, "no peer on the topic yet", "gossip needs connected peers of the same run: see the dht and bootstrap lines")
	case meshKnown:
		return warn(check, fmt.Sprintf("%.0f peers on the topic, none in the mesh yet", on),
			"the mesh forms within seconds; if it stays empty, peers may be scoring this node down (lowband ledger: jailed or slashed?)")
	}
	return ok(check, "%.0f peers on the topic; no mesh reported (the node does not subscribe to it, or does not track its mesh)", on)
}

// Reachability reports what AutoNAT found: whether peers can dial this node.
func Reachability(c *configs.Config, run *Running) Result {
	const check = "reachability"
	if loopbackOnly(c.P2P.Listen) {
		return skip(check, "not checked: the node listens on loopback only (a local swarm)")
	}
	if run == nil {
		return skip(check, "not checked: no node is running")
	}
	if c.Role == configs.RoleBootstrap && (!c.P2P.RelayService || c.P2P.Reachability != "public") {
		return warn(check, "a bootstrap node without its relay service running: nodes behind NAT that cannot dial one another have no way to exchange their contributions (a bootstrap node relays gossip but the shards)",
			`set p2p.relay_service = true and p2p.reachability = "public" (what lowband init --profile bootstrap writes)`)
	}
	switch c.P2P.Reachability {
	case "public":
		return ok(check, "public: set by p2p.reachability (AutoNAT is not asked); the relay and NAT services run")
	case "private":
		return warn(check, "private: set by p2p.reachability (AutoNAT is not asked); peers reach this node through relays only",
			"remove p2p.reachability to let AutoNAT decide")
	}
	v, known := metricValues(run.Metrics, "libp2p_autonat_reachability_status")[""]
	switch {
	case !known:
		return skip(check, "not checked: the node reports no AutoNAT state")
	case v == 1:
		return ok(check, "public: AutoNAT found that peers can dial this node")
	case v == 2 && c.P2P.RelayClient:
		return warn(check, "private: AutoNAT found that peers cannot dial this node (NAT or firewall); peers reach it through the relays of its bootstrap peers, or directly once hole punching succeeds",
			"for direct connections, forward the listen port (TCP and UDP) to this machine, or set p2p.announce to an address others can dial")
	case v == 2:
		return warn(check, "private: AutoNAT found that peers cannot dial this node (NAT or firewall); it can dial out, nobody can dial in",
			"forward the listen port (TCP and UDP) to this machine, set p2p.announce to an address others can dial, or set p2p.relay_client = true to be reached through the bootstrap peers' relays")
	}
	return warn(check, "unknown: AutoNAT has not decided yet",
		"it needs peers that run the NAT service (bootstrap nodes on public addresses do); run doctor again in a few minutes")
}

func loopbackOnly(listen []string) bool {
	for _, a := range listen {
		m, err := ma.NewMultiaddr(a)
		if err != nil || !manet.IsIPLoopback(m) {
			return false
		}
	}
	return len(listen) > 0
}

// metricValues reads one metric from Prometheus text: its value per label set (the text
// between the braces, "" without labels). Lines it cannot read are left out.
func metricValues(text, name string) map[string]float64 {
	out := map[string]float64{}
	for _, line := range strings.Split(text, "\n") {
		rest, found := strings.CutPrefix(line, name)
		if !found {
			continue
		}
		labels := ""
		if strings.HasPrefix(rest, "{") {
			end := strings.IndexByte(rest, '}')
			if end < 0 {
				continue
			}
			labels, rest = rest[1:end], rest[end+1:]
		} else if !strings.HasPrefix(rest, " ") {
			continue // a longer name with the same prefix
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		if v, err := strconv.ParseFloat(f[0], 64); err == nil {
			out[labels] = v
		}
	}
	return out
}
