package bench

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/p2p/p2ptest"
)

// Formation is how a swarm formed: what RunDiscovery and RunGossip both report.
// A swarm is formed (p2ptest.Form) when every host, the bootstrap included, is in the
// gossipsub mesh of each of the run's topics with at least gossipsub's lower degree
// D_lo of peers, every routing table holds at least min(k, nodes-1) peers (k = 20,
// kad-dht's bucket size), and on each topic every host reaches every other along
// mesh links, so that a message from any host reaches all. Every host but the
// bootstrap subscribes to every topic, as a training node does; the bootstrap relays
// them.
type Formation struct {
	Nodes     int    `json:"nodes"`     // hosts, the bootstrap included
	Transport string `json:"transport"` // tcp, quic, both (loopback sockets) or mem (in-memory mocknet)
	// AllTablesNonemptyS is the time from the first host's start until every
	// host's DHT routing table holds at least one peer.
	AllTablesNonemptyS float64 `json:"all_tables_nonempty_s"`
	FormedS            float64 `json:"formed_s"`     // time from the first start until formed
	FormedCPUS         float64 `json:"formed_cpu_s"` // CPU time the process spent until then
	// MemPerHostBytes is the Go heap and stacks in use once formed, over the hosts.
	MemPerHostBytes int64 `json:"mem_per_host_bytes"`
	// SubscribedS is the time from the first start until every host has started and
	// subscribed to every topic (each as soon as it has started, as a node does).
	SubscribedS float64 `json:"subscribed_s"`
	// PeersMean and PeersMax are the connected peers of a host once formed: the mean
	// over the hosts and the most any host has.
	PeersMean float64 `json:"peers_mean"`
	PeersMax  int     `json:"peers_max"`
	// DHTRequestsPerHost is the DHT requests a host answered until formed, the mean
	// over the hosts.
	DHTRequestsPerHost float64 `json:"dht_requests_per_host"`
	// HostsBelowD counts the hosts that, once formed, have a mesh of fewer than
	// gossipsub's degree D peers (but at least D_lo) on some topic.
	HostsBelowD int `json:"hosts_below_d"`
}

// DiscoveryResult is what RunDiscovery measures.
type DiscoveryResult struct {
	Formation
	// Messages is how many messages were published once formed, one at a time, each
	// from a different host spread over the swarm.
	Messages int `json:"messages"`
	// ReachAllS is the longest any of them took from the start of Publish until
	// every other subscribed host had it.
	ReachAllS float64 `json:"reach_all_s"`
}

// pollEvery is how often the benchmarks check their conditions.
const pollEvery = 50 * time.Millisecond

// discoveryMessages is how many hosts RunDiscovery publishes from once formed.
const discoveryMessages = 4

// RunDiscovery starts one bootstrap host and nodes-1 hosts that know only the
// bootstrap, all in this process, times how long the swarm takes to form through
// the private DHT and gossipsub, then how long a message takes to reach every
// host, from each of a few hosts spread over the swarm. It fails if timeout passes
// first or a message misses a host. transport is one of p2ptest.Transports.
func RunDiscovery(ctx context.Context, nodes int, transport string, timeout time.Duration) (DiscoveryResult, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	sw, form, err := formSwarm(ctx, nodes, transport)
	res := DiscoveryResult{Formation: form}
	if err != nil {
		return res, err
	}
	defer sw.close()
	hosts := sw.s.Hosts
	res.Messages = min(discoveryMessages, len(hosts))
	rec := newRecorder(sw, res.Messages)
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	rec.start(rctx)
	for k := range res.Messages {
		if err := rec.publish(ctx, hosts[k*len(hosts)/res.Messages], k, 64, timeout); err != nil {
			return res, err
		}
	}
	stop()
	rec.wg.Wait()
	for k := range res.Messages {
		n, slowest := rec.reached(k)
		if n != len(hosts)-1 {
			return res, fmt.Errorf("message %d reached %d of %d hosts", k, n, len(hosts)-1)
		}
		res.ReachAllS = max(res.ReachAllS, slowest)
	}
	return res, nil
}

// swarm is a started swarm and each subscribed host's subscription to the shards topic.
type swarm struct {
	s      *p2ptest.Swarm
	shards []*p2p.Subscription // by host of s.Hosts
	others []*p2p.Subscription // the other topics, kept open
}

func (sw *swarm) close() {
	for _, sub := range append(sw.shards, sw.others...) {
		sub.Cancel()
	}
	_ = sw.s.Close()
}

// formSwarm starts the swarm, every host but the bootstrap subscribing to every topic
// as soon as it has started, and waits until the swarm has formed. On error the
// swarm is closed.
func formSwarm(ctx context.Context, nodes int, transport string) (*swarm, Formation, error) {
	f := Formation{Nodes: nodes, Transport: transport}
	if nodes < 3 {
		return nil, f, fmt.Errorf("need at least 3 nodes, got %d", nodes)
	}
	if !slices.Contains(p2ptest.Transports, transport) {
		return nil, f, fmt.Errorf("unknown transport %q (want one of %v)", transport, p2ptest.Transports)
	}
	start, cpu0 := time.Now(), cpuTime()
	subs := make([][]*p2p.Subscription, nodes-1)
	s, err := p2ptest.StartOnThen(ctx, transport, nodes-1, nil, func(i int, h *p2p.Host) error {
		var err error
		subs[i], err = subscribe(h)
		return err
	})
	sw := &swarm{s: s}
	for _, hs := range subs {
		for k, sub := range hs {
			if p2p.Kinds[k] == p2p.KindShards {
				sw.shards = append(sw.shards, sub)
			} else {
				sw.others = append(sw.others, sub)
			}
		}
	}
	if err != nil { // the start closed the hosts
		for _, sub := range append(sw.shards, sw.others...) {
			sub.Cancel()
		}
		return nil, f, err
	}
	f.SubscribedS = time.Since(start).Seconds()
	all := s.All()
	err = p2ptest.Poll(ctx, "every routing table to be non-empty", pollEvery, func() bool {
		return !slices.ContainsFunc(all, func(h *p2p.Host) bool { return h.RoutingTableSize() == 0 })
	})
	f.AllTablesNonemptyS = time.Since(start).Seconds()
	var last p2ptest.Formation
	if err == nil {
		err = p2ptest.Poll(ctx, "the swarm to form", pollEvery, func() bool {
			last = p2ptest.Form(all, p2p.Kinds)
			return last.Formed()
		})
	}
	if err != nil {
		sw.close()
		return nil, f, fmt.Errorf("%w (%v)", err, last)
	}
	f.FormedS, f.FormedCPUS = time.Since(start).Seconds(), (cpuTime() - cpu0).Seconds()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	f.MemPerHostBytes = int64(ms.HeapInuse+ms.StackInuse) / int64(nodes)
	f.observe(all)
	return sw, f, nil
}

// observe fills in what the formed swarm's hosts hold: connections, DHT requests
// answered, and how many hosts have a mesh below gossipsub's degree D on some topic.
func (f *Formation) observe(all []*p2p.Host) {
	var peers, served int64
	for _, h := range all {
		n := len(h.ConnectedPeers())
		peers += int64(n)
		f.PeersMax = max(f.PeersMax, n)
		served += h.DHTRequestsServed()
		for _, kind := range p2p.Kinds {
			if n, _ := h.MeshPeers(kind); n < min(p2p.MeshDegree, len(all)-1) {
				f.HostsBelowD++
				break
			}
		}
	}
	f.PeersMean = float64(peers) / float64(len(all))
	f.DHTRequestsPerHost = float64(served) / float64(len(all))
}

// subscribe subscribes a host to every topic kind, in the order of p2p.Kinds. Each
// host subscribes as soon as it has started, as a node does at its own start: a
// subscription waits for the host's pubsub loop, which grows busy with the
// connections of a forming swarm, and subscribing the hosts once all had started,
// one after another, made the swarm wait for the sum of those waits (40 s of 48 at
// 100 in-memory hosts on a loaded machine; in parallel still 20-30 s).
func subscribe(h *p2p.Host) ([]*p2p.Subscription, error) {
	var subs []*p2p.Subscription
	for _, kind := range p2p.Kinds {
		sub, err := h.Subscribe(kind)
		if err != nil {
			for _, s := range subs {
				s.Cancel()
			}
			return nil, err
		}
		subs = append(subs, sub)
	}
	return subs, nil
}

// ParseSize reads a byte count: a plain number (bytes) or a number with a unit
// B, KiB, MiB, GiB (powers of 1024) or kB, KB, MB, GB (powers of 1000).
func ParseSize(s string) (int, error) {
	units := []struct {
		suffix string
		mult   float64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"kB", 1e3}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}}
	num, mult := strings.TrimSpace(s), 1.0
	for _, u := range units {
		if strings.HasSuffix(num, u.suffix) {
			num, mult = strings.TrimSpace(strings.TrimSuffix(num, u.suffix)), u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f < 0 || f*mult > 1<<40 {
		return 0, fmt.Errorf("size %q: want a number of bytes, optionally with a unit (512KiB, 1MiB, 1000)", s)
	}
	n := f * mult
	if n != float64(int(n)) {
		return 0, fmt.Errorf("size %q is not a whole number of bytes", s)
	}
	return int(n), nil
}
