package p2ptest

import (
	"fmt"

	"github.com/lowband/lowband/p2p"
)

// TableMin is the routing table a host needs to be healthy in a swarm of more than
// TableMin hosts: kad-dht's bucket size k, the number of closest peers a lookup
// converges on.
const TableMin = 20

// Formation says how far a swarm has formed. A swarm is formed when every host
// (the bootstrap included)
//   - is in the gossipsub mesh of every topic kind asked for with at least
//     min(D_lo, n-1) peers (p2p.MeshDegreeLow: gossipsub grafts more only below
//     it, so a mesh of D_lo is one it keeps), and
//   - has a healthy routing table: at least min(TableMin, n-1) peers.
//
// A node does not need to know every other node. That a message from any host
// reaches all is for the caller to check by publishing (see the bench commands).
type Formation struct {
	Hosts     int // hosts looked at
	ThinMesh  int // hosts with a mesh below the degree on some topic asked for
	ThinTable int // hosts whose routing table is not healthy
}

// Formed reports whether no host is left short.
func (f Formation) Formed() bool { return f.ThinMesh == 0 && f.ThinTable == 0 }

func (f Formation) String() string {
	return fmt.Sprintf("%d of %d hosts short of a mesh, %d of a healthy routing table", f.ThinMesh, f.Hosts, f.ThinTable)
}

// Form checks every host against the definition above, for the topic kinds given.
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
	return f
}
