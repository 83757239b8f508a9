package p2p

import (
	"context"
	"maps"
	"time"

	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/peer"
)

// The host refreshes its DHT routing table on its own schedule; kad-dht's auto refresh
// is off. A refresh is a lookup of the host's own key and of a random key in each
// bucket not looked into for tableRefreshEvery, after pinging the table's idle peers.
// kad-dht's auto refresh runs one when it starts (on an empty table: nothing), then
// again whenever a peer enters a table of at most tableLow peers, again once its
// first refresh ends, and on every change of the host's addresses: in a swarm forming
// at once every host ran several, each of tens of requests to peers it then stayed
// connected to. Half the CPU of forming a swarm of 100 in-process hosts went there.
//
// A full refresh that leaves the table's peers as they were doubles the period before
// the next, up to tableRefreshMax; one that changes them (a peer found or dropped), or
// fails, puts it back to tableRefreshEvery. A refresh looks up a key in each of the table's buckets,
// each lookup asking every DHT node of a small swarm for its nearest peers: in a swarm
// of 16 that started together, the refreshes and advertisements of every host falling
// together ten minutes in cost each host 70 to 90 KB in each of three rounds. In such a swarm every host is
// connected to every other, and a newcomer enters the table when it connects (it looks
// its own key up, and dials the peers it finds at the rendezvous).
const (
	tableRefreshEvery = 10 * time.Minute // kad-dht's own period
	tableRefreshMax   = 80 * time.Minute // the period after quiet refreshes
	tableLow          = 10               // kad-dht's threshold for a table to fix
	tableLowEvery     = time.Minute      // a table of at most tableLow is refreshed this often
	tableRetryFirst   = 5 * time.Second  // after a failed refresh; doubles up to tableRefreshEvery
	tableCheckEvery   = time.Second      // how often refreshLoop looks at the table
)

// refreshSchedule says when the routing table is due for a refresh: as soon as it
// holds a peer (a lookup needs one to ask), then every tableRefreshEvery, sooner
// (every tableLowEvery) while it holds at most tableLow peers, and after a failed
// refresh once a growing retry has passed. The zero value is a host that never
// refreshed. Not safe for concurrent use.
type refreshSchedule struct {
	last   time.Time     // end of the last refresh; zero = never
	retry  time.Duration // wait after the last refresh when it failed; 0 = it succeeded
	joined bool          // a refresh has succeeded
	quiet  int           // full refreshes in a row that left the table's peers as they were
}

// period is the time between two refreshes of a healthy table: tableRefreshEvery,
// doubled for each quiet refresh in a row, up to tableRefreshMax.
func (s *refreshSchedule) period() time.Duration {
	p := tableRefreshEvery
	for range s.quiet {
		if p >= tableRefreshMax {
			break
		}
		p *= 2
	}
	return min(p, tableRefreshMax)
}

// due reports whether a refresh is due at now with a table of the given size.
func (s *refreshSchedule) due(now time.Time, table int) bool {
	switch {
	case table == 0:
		return false
	case s.last.IsZero():
		return true
	case s.retry > 0:
		return now.Sub(s.last) >= s.retry
	case table <= tableLow:
		return now.Sub(s.last) >= tableLowEvery
	}
	return now.Sub(s.last) >= s.period()
}

// done records a refresh that ended at now with err; changed: it was a full refresh
// (the table had been refreshed before) that left other peers in the table than it
// found there, or the first.
func (s *refreshSchedule) done(now time.Time, err error, changed bool) {
	s.last = now
	switch {
	case err == nil:
		if !s.joined || changed {
			s.quiet = 0
		} else {
			s.quiet++
		}
		s.retry, s.joined = 0, true
	case s.retry == 0:
		s.retry, s.quiet = tableRetryFirst, 0
	default:
		s.retry = min(2*s.retry, tableRefreshEvery)
	}
}

// refreshLoop refreshes the routing table when refreshSchedule says so. Until one
// refresh has succeeded, a refresh is a lookup of the host's own key only: Kademlia's
// join, which finds the host's closest peers and makes it known to them; the buckets
// far from it fill from the peers that look it up, from its own lookups (advertising
// and finding the rendezvous) and at the first full refresh, tableRefreshEvery later.
// A full refresh of every bucket at once on joining cost each host of a forming swarm
// of N a request to nearly every other host. When the host's own addresses change
// (a relay reservation, AutoNAT's verdict), it looks its own key up again, at most
// once per tableCheckEvery, so that its closest peers connect to it and learn the new
// addresses, as kad-dht's auto refresh did.
func (h *Host) refreshLoop() {
	defer h.wg.Done()
	var addrs <-chan any
	if sub, err := h.h.EventBus().Subscribe(new(event.EvtLocalAddressesUpdated)); err == nil {
		defer sub.Close()
		addrs = sub.Out()
	}
	var s refreshSchedule
	moved := false // the host's addresses changed since its last lookup of its own key
	for {
		for drained := false; !drained; {
			select {
			case <-addrs:
				moved = true
			default:
				drained = true
			}
		}
		table := h.RoutingTableSize()
		switch {
		case s.due(time.Now(), table):
			before := h.tablePeers()
			err := h.refresh(s.joined)
			s.done(time.Now(), err, !maps.Equal(before, h.tablePeers()))
			moved = false // a full refresh looks the host's own key up too
		case moved && table > 0:
			_ = h.refresh(false)
			moved = false
		}
		if h.ctx.Err() != nil || !h.sleep(tableCheckEvery) {
			return
		}
	}
}

// tablePeers is the set of peers in the DHT routing table.
func (h *Host) tablePeers() map[peer.ID]bool {
	out := map[peer.ID]bool{}
	for _, p := range h.dht.RoutingTable().ListPeers() {
		out[p] = true
	}
	return out
}

// refresh refreshes every bucket of the routing table (full) or looks the host's own
// key up. A full refresh of a table holding fewer than a bucket's worth of peers (K, 20)
// looks the host's own key up first: a lookup that ends with fewer than K peers asked
// every DHT node in reach, each answering with the nodes it knows nearest the key (all of
// them, in a swarm that small), so refreshing the buckets one by one, a lookup each,
// could find no one more. In a swarm of 16 that started together, the first full refresh
// ten minutes in cost each host 132 KB in the round it fell in.
func (h *Host) refresh(full bool) error {
	t0 := time.Now()
	var err error
	census := false
	if full && h.RoutingTableSize() < h.dht.BucketSize() {
		var n int
		n, err = h.lookupOwnKey()
		census = err == nil && n < h.dht.BucketSize()
		full = !census && err == nil
	}
	switch {
	case census, err != nil:
	case full:
		select {
		case err = <-h.dht.RefreshRoutingTable():
		case <-h.ctx.Done():
			return h.ctx.Err()
		}
	default:
		_, err = h.lookupOwnKey()
	}
	h.met.refreshes.Inc()
	h.log.Debug("routing table refreshed", "full", full, "census", census, "took", time.Since(t0), "size", h.RoutingTableSize(), "err", err)
	return err
}

// lookupOwnKey looks the host's own key up (Kademlia's join) and returns how many peers
// the lookup ended with: the nearest it found, at most K.
func (h *Host) lookupOwnKey() (int, error) {
	ctx, cancel := context.WithTimeout(h.ctx, findTimeout)
	defer cancel()
	ps, err := h.dht.GetClosestPeers(ctx, string(h.h.ID()))
	return len(ps), err
}
