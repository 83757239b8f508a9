package p2ptest

import (
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/p2p"
)

// TableMin is the routing table a host needs to be healthy in a swarm of more than
// TableMin hosts: kad-dht's bucket size k, the number of closest peers a lookup
// converges on.
const TableMin = 20

// Formation says how far a swarm has formed. A node does not need to know every
// other node: it needs a healthy routing table and a full gossip mesh. A swarm is
// formed when every host (the bootstrap included)
//   - is in the gossipsub mesh of every topic kind asked for with at least
//     min(D_lo, n-1) peers (p2p.MeshDegreeLow). gossipsub grafts up to its degree
//     D only below D_lo and leaves a mesh of D_lo..D_hi as it is, so a host at D_lo
//     has the full mesh gossipsub keeps; asking for D would wait for a graft that
//     never comes (at 50 hosts about a fifth stay at D_lo);
//   - has a healthy routing table: at least min(TableMin, n-1) peers; and
//   - for each topic, every host reaches every other along mesh links (each host
//     forwards a message to the peers of its own mesh): a message published by any
//     host reaches all, without waiting for gossip's IHAVE/IWANT repair. The
//     callers also time a delivery (the bench commands publish from several hosts).
type Formation struct {
	Hosts     int // hosts looked at
	ThinMesh  int // hosts with a mesh below the degree on some topic asked for
	ThinTable int // hosts whose routing table is not healthy
	Split     int // topics whose mesh some host's message cannot reach every host through
}

// Formed reports whether no host is left short.
func (f Formation) Formed() bool { return f.ThinMesh == 0 && f.ThinTable == 0 && f.Split == 0 }

func (f Formation) String() string {
	return fmt.Sprintf("%d of %d hosts short of a mesh, %d of a healthy routing table; %d topics' meshes split",
		f.ThinMesh, f.Hosts, f.ThinTable, f.Split)
}

// Form checks every host against the definition above, for the topic kinds given.
// It costs O(hosts x mesh degree) per topic.
func Form(hosts []*p2p.Host, kinds []string) Formation {
	f := Formation{Hosts: len(hosts)}
	wantMesh := min(p2p.MeshDegreeLow, len(hosts)-1)
	wantTable := min(TableMin, len(hosts)-1)
	for _, h := range hosts {
		for _, kind := range kinds {
			if n, ok := h.MeshPeers(kind); !ok || n < wantMesh {
				f.ThinMesh++
				break
			}
		}
		if h.RoutingTableSize() < wantTable {
			f.ThinTable++
		}
	}
	for _, kind := range kinds {
		if !MeshConnected(hosts, kind) {
			f.Split++
		}
	}
	return f
}

// MeshConnected reports whether, on the topic of the given kind, every host reaches
// every other along the links of gossipsub's meshes: host a forwards what it has to
// every peer of its own mesh. It checks that the directed graph of mesh links is
// strongly connected: every host is reached from the first, and the first from every
// host. A mesh peer that is not among hosts is ignored.
func MeshConnected(hosts []*p2p.Host, kind string) bool {
	if len(hosts) < 2 {
		return true
	}
	index := make(map[peer.ID]int, len(hosts))
	for i, h := range hosts {
		index[h.ID()] = i
	}
	out := make([][]int, len(hosts)) // out[a]: hosts in a's mesh
	in := make([][]int, len(hosts))  // in[b]: hosts whose mesh holds b
	for a, h := range hosts {
		for _, p := range h.MeshPeerIDs(kind) {
			if b, ok := index[p]; ok && b != a {
				out[a] = append(out[a], b)
				in[b] = append(in[b], a)
			}
		}
	}
	return reachesAll(out) && reachesAll(in)
}

// reachesAll reports whether every node of the graph (adjacency lists) is reached
// from node 0.
func reachesAll(adj [][]int) bool {
	seen := make([]bool, len(adj))
	seen[0] = true
	stack, n := []int{0}, 1
	for len(stack) > 0 {
		a := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, b := range adj[a] {
			if !seen[b] {
				seen[b] = true
				n++
				stack = append(stack, b)
			}
		}
	}
	return n == len(adj)
}
