package bench

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/p2p/p2ptest"
)

// DiscoveryResult is what RunDiscovery measures.
type DiscoveryResult struct {
	Nodes int `json:"nodes"` // hosts, the bootstrap included
	// AllTablesNonemptyS is the time from the first host's start until every
	// host's DHT routing table holds at least one peer.
	AllTablesNonemptyS float64 `json:"all_tables_nonempty_s"`
	// AllPeersFoundS is the time until every host has found every other host: each
	// is connected to it or holds it in its routing table.
	AllPeersFoundS float64 `json:"all_peers_found_s"`
}

// pollEvery is how often the benchmarks check their conditions.
const pollEvery = 10 * time.Millisecond

// RunDiscovery starts one bootstrap host and nodes-1 hosts that know only the
// bootstrap, all in this process on loopback, and times how long discovery
// through the private DHT takes. It fails if timeout passes first.
// transport is "tcp", "quic" or "both".
func RunDiscovery(ctx context.Context, nodes int, transport string, timeout time.Duration) (DiscoveryResult, error) {
	if nodes < 2 {
		return DiscoveryResult{}, fmt.Errorf("need at least 2 nodes, got %d", nodes)
	}
	listen, err := p2ptest.Listen(transport)
	if err != nil {
		return DiscoveryResult{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	s, err := p2ptest.Start(ctx, nodes-1, func(_ int, c *p2p.Config) { c.Listen = listen })
	if err != nil {
		return DiscoveryResult{}, err
	}
	defer s.Close()
	all := s.All()
	res := DiscoveryResult{Nodes: nodes}
	if err := p2ptest.Poll(ctx, "every routing table to be non-empty", pollEvery, func() bool {
		for _, h := range all {
			if h.RoutingTableSize() == 0 {
				return false
			}
		}
		return true
	}); err != nil {
		return res, err
	}
	res.AllTablesNonemptyS = time.Since(start).Seconds()
	if err := p2ptest.Poll(ctx, "every host to find every other", pollEvery, func() bool {
		return p2ptest.FoundAll(all)
	}); err != nil {
		return res, fmt.Errorf("%w (%d hosts still miss peers)", err, missing(all))
	}
	res.AllPeersFoundS = time.Since(start).Seconds()
	return res, nil
}

func missing(all []*p2p.Host) int {
	n := 0
	for _, h := range all {
		if p2ptest.Missing(h, all) > 0 {
			n++
		}
	}
	return n
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
