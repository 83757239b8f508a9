package p2p

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
)

// seedDialTimeout bounds one dial to a bootstrap or cached peer.
const seedDialTimeout = 10 * time.Second

// isolatedCheck is how often a connected host checks that it still has a connection.
const isolatedCheck = 10 * time.Second

// bootstrapLoop keeps the host joined: whenever it has no connection it dials the
// bootstrap and cached peers together; if none answers it logs one line saying
// what it tried and retries with a doubling, capped wait. It never gives up.
// While connected with an empty routing table it has the DHT check its connected
// peers again on the same schedule (see recheckTable).
func (h *Host) bootstrapLoop() {
	defer h.wg.Done()
	seeds, nBoot, nCached := h.seeds()
	if len(seeds) == 0 {
		h.log.Info("no bootstrap or cached peers configured; waiting for peers to connect")
		return
	}
	wait := h.cfg.RetryMin
	for {
		next := isolatedCheck
		switch {
		case !h.connected():
			next = wait
			if h.dialSeeds(seeds, nBoot, nCached, wait) {
				// Look again soon: the routing table should fill now.
				next, wait = h.cfg.RetryMin, h.cfg.RetryMin
			} else {
				wait = min(2*wait, h.cfg.RetryMax)
			}
		case h.RoutingTableSize() == 0:
			h.recheckTable()
			next = wait
			wait = min(2*wait, h.cfg.RetryMax)
		default:
			wait = h.cfg.RetryMin
		}
		if !h.sleep(next) {
			return
		}
	}
}

// dialSeeds dials the seeds and reports whether any answered; when none did it logs
// what it tried and when it will try again.
func (h *Host) dialSeeds(seeds []peer.AddrInfo, nBoot, nCached int, retry time.Duration) bool {
	answered, firstErr := h.dialAll(seeds)
	if h.ctx.Err() != nil {
		return false
	}
	if answered == 0 {
		h.failedRounds.Add(1)
		h.met.bootstrapFail.Inc()
		h.log.Warn(fmt.Sprintf("no bootstrap peer answered; tried %d bootstrap and %d cached peers; retrying in %s",
			nBoot, nCached, retry), "err", firstErr)
		return false
	}
	h.log.Info("connected to the network", "answered", answered, "tried", len(seeds))
	return true // refreshLoop fills the table once the first peer is in it
}

// recheckTable has the DHT check every connected peer for its routing table again.
// The DHT admits a connected peer only once it has answered one request, and when
// that first check fails (a bootstrap peer too busy to answer in time) it looks again
// only every two minutes: without this, a host can sit connected with an empty table,
// unable to advertise or look anyone up.
func (h *Host) recheckTable() {
	h.log.Debug("connected with an empty routing table; checking connected peers again")
	_ = h.dht.Bootstrap(h.ctx) // never fails: it only wakes the DHT's own check
}

// seeds merges the bootstrap and cached peers, without the host itself and
// without duplicates (a peer listed twice keeps all its addresses).
func (h *Host) seeds() (seeds []peer.AddrInfo, nBoot, nCached int) {
	index := map[peer.ID]int{}
	add := func(list []peer.AddrInfo) int {
		n := 0
		for _, ai := range list {
			if ai.ID == h.h.ID() || ai.ID == "" {
				continue
			}
			if i, ok := index[ai.ID]; ok {
				seeds[i].Addrs = append(seeds[i].Addrs, ai.Addrs...)
				continue
			}
			index[ai.ID] = len(seeds)
			seeds = append(seeds, peer.AddrInfo{ID: ai.ID, Addrs: append(ai.Addrs[:0:0], ai.Addrs...)})
			n++
		}
		return n
	}
	nBoot = add(h.cfg.Bootstrap)
	nCached = add(h.cfg.Cached)
	return seeds, nBoot, nCached
}

// dialAll dials every seed in parallel and returns how many answered and the
// first error seen.
func (h *Host) dialAll(seeds []peer.AddrInfo) (int, error) {
	var (
		mu       sync.Mutex
		answered int
		firstErr error
		wg       sync.WaitGroup
	)
	for _, ai := range seeds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Our own retry schedule paces these dials, so they skip the swarm's
			// per-address dial back-off, which grows to minutes after failures.
			ctx, cancel := context.WithTimeout(network.WithForceDirectDial(h.ctx, "bootstrap retry"), seedDialTimeout)
			defer cancel()
			err := h.h.Connect(ctx, ai)
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				answered++
			} else if firstErr == nil {
				firstErr = err
			}
		}()
	}
	wg.Wait()
	return answered, firstErr
}

// sleep waits d or until the host closes; it reports whether the host is still open.
func (h *Host) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-h.ctx.Done():
		return false
	}
}
