package doctor

import (
	"errors"
	"testing"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/node"
)

func running(st node.Status, metrics string) *Running {
	return &Running{Status: st, APIAddr: "127.0.0.1:5001", Metrics: metrics}
}

func TestNodeRunningAndDHT(t *testing.T) {
	h := configs.Home{Dir: "/h"}
	want(t, "not running", NodeRunning(h, nil, errors.New("no api.addr in the home")), Warn, "no api.addr", "lowband run --home /h")
	up := node.Status{PeerID: "12D3KooWX", Role: "node", Version: "v1", UptimeSeconds: 125, ConnectedPeers: 3, DHTTableSize: 7}
	want(t, "running", NodeRunning(h, running(up, ""), nil), OK, "12D3KooWX", "version v1", "up 2m5s", "3 peers")

	want(t, "dht, not running", DHT(nil), Skip, "no node is running")
	want(t, "dht filled", DHT(running(up, "")), OK, "7 peers")
	young := node.Status{UptimeSeconds: 3}
	want(t, "dht empty at start", DHT(running(young, "")), Warn, "so far", "again")
	alone := node.Status{UptimeSeconds: 600, Role: "node"}
	want(t, "dht empty, alone", DHT(running(alone, "")), Fail, "alone", "bootstrap")
	first := node.Status{UptimeSeconds: 600, Role: "bootstrap"}
	want(t, "the first bootstrap node, alone", DHT(running(first, "")), Warn, "alone", "waits for")
	wrong := node.Status{UptimeSeconds: 600, ConnectedPeers: 2}
	want(t, "dht empty with peers", DHT(running(wrong, "")), Fail, "none of them serves", "network.toml")
}

const metricsText = `# HELP lowband_p2p_gossip_topic_peers Peers on the topic.
# TYPE lowband_p2p_gossip_topic_peers gauge
lowband_p2p_gossip_topic_peers{kind="attest"} 3
lowband_p2p_gossip_topic_peers{kind="evidence"} 0
lowband_p2p_gossip_topic_peers{kind="records"} 2
lowband_p2p_gossip_topic_peers{kind="shards"} 4
lowband_p2p_gossip_topic_peers_extra{kind="shards"} 99
lowband_p2p_gossip_mesh_peers{kind="attest"} 3
lowband_p2p_gossip_mesh_peers{kind="evidence"} 0
lowband_p2p_gossip_mesh_peers{kind="records"} 0
lowband_p2p_gossip_mesh_peers{kind="shards"} 4
libp2p_autonat_reachability_status 2
libp2p_autonat_reachability_status_confidence 3
`

func TestGossip(t *testing.T) {
	st := node.Status{Topics: []string{"a", "b", "c", "d"}}
	rs := Gossip(running(st, metricsText))
	if len(rs) != 4 {
		t.Fatalf("want a line per topic kind: %+v", rs)
	}
	byKind := map[string]Result{}
	for _, r := range rs {
		byKind[r.Check] = r
	}
	want(t, "shards", byKind["gossip shards"], OK, "4 peers in the mesh, 4 on the topic")
	want(t, "records", byKind["gossip records"], Warn, "2 peers on the topic, none in the mesh", "scoring")
	want(t, "evidence", byKind["gossip evidence"], Warn, "no peer on the topic", "dht")

	noMesh := `lowband_p2p_gossip_topic_peers{kind="shards"} 5` + "\n"
	want(t, "no mesh metric", Gossip(running(st, noMesh))[0], OK, "5 peers on the topic", "no mesh reported")
	want(t, "no metrics", Gossip(running(st, ""))[0], Skip, "does not report")
	want(t, "no topics", Gossip(running(node.Status{}, ""))[0], Warn, "joined no topic")
	want(t, "not running", Gossip(nil)[0], Skip, "no node is running")
	boot := Gossip(running(node.Status{Role: configs.RoleBootstrap, Topics: []string{"a", "b", "c"}}, metricsText))
	for _, r := range boot {
		if r.Check == "gossip shards" {
			want(t, "bootstrap, shards", r, OK, "not joined", "bootstrap node")
		} else if r.Check == "gossip attest" {
			want(t, "bootstrap, attest", r, OK, "3 peers in the mesh")
		}
	}
}

func TestReachability(t *testing.T) {
	c := &configs.Config{P2P: configs.P2PConfig{Listen: []string{"/ip4/0.0.0.0/tcp/4001"}}}
	at := func(v string) *Running { return running(node.Status{}, "libp2p_autonat_reachability_status "+v+"\n") }
	want(t, "public", Reachability(c, at("1")), OK, "public")
	want(t, "private", Reachability(c, at("2")), Warn, "cannot dial this node", "p2p.announce", "p2p.relay_client")
	relayed := &configs.Config{P2P: configs.P2PConfig{Listen: c.P2P.Listen, NATConfig: configs.NATConfig{RelayClient: true}}}
	want(t, "private, relay client", Reachability(relayed, at("2")), Warn, "cannot dial this node", "through the relays of its bootstrap peers")
	want(t, "unknown", Reachability(c, at("0")), Warn, "not decided", "NAT service")
	want(t, "no autonat metric", Reachability(c, running(node.Status{}, metricsText[:200])), Skip, "no AutoNAT")
	want(t, "not running", Reachability(c, nil), Skip, "no node is running")
	forced := &configs.Config{P2P: configs.P2PConfig{Listen: c.P2P.Listen, NATConfig: configs.NATConfig{Reachability: "public"}}}
	want(t, "forced public, AutoNAT idle", Reachability(forced, at("0")), OK, "public", "p2p.reachability")
	forced.P2P.Reachability = "private"
	want(t, "forced private", Reachability(forced, at("0")), Warn, "private", "p2p.reachability")
	local := &configs.Config{P2P: configs.P2PConfig{Listen: []string{"/ip4/127.0.0.1/tcp/0"}}}
	want(t, "loopback", Reachability(local, at("2")), Skip, "loopback only")
	boot, err := configs.Default(configs.ProfileBootstrap)
	if err != nil {
		t.Fatal(err)
	}
	want(t, "bootstrap as init writes it", Reachability(boot, at("0")), OK, "public")
	boot.P2P.Reachability = ""
	want(t, "bootstrap, AutoNAT decides", Reachability(boot, at("1")), Warn, "without its relay service running", "p2p.reachability")
	boot.P2P.Reachability, boot.P2P.RelayService = "public", false
	want(t, "bootstrap, no relay service", Reachability(boot, at("1")), Warn, "without its relay service running", "p2p.relay_service")
}

func TestMetricValuesReadsOnlyTheNamedMetric(t *testing.T) {
	got := metricValues(metricsText+"lowband_p2p_gossip_topic_peers{kind=\"x\"} NaN-ish\nlowband_p2p_gossip_topic_peers{kind=\"y\"\n",
		"lowband_p2p_gossip_topic_peers")
	if len(got) != 4 || got[`kind="shards"`] != 4 || got[`kind="evidence"`] != 0 {
		t.Errorf("topic peers: %v", got)
	}
	if v := metricValues(metricsText, "libp2p_autonat_reachability_status"); len(v) != 1 || v[""] != 2 {
		t.Errorf("reachability: %v", v)
	}
}
