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
func (h *Host) bootstrapLoop() {
	defer h.wg.Done()
	seeds, nBoot, nCached := h.seeds()
	if len(seeds) == 0 {
		h.log.Info("no bootstrap or cached peers configured; waiting for peers to connect")
		return
	}
	wait := h.cfg.RetryMin
	for {
		if !h.connected() {
			answered, firstErr := h.dialAll(seeds)
			if h.ctx.Err() != nil {
				return
			}
			if answered == 0 {
				h.failedRounds.Add(1)
				h.met.bootstrapFail.Inc()
				h.log.Warn(fmt.Sprintf("no bootstrap peer answered; tried %d bootstrap and %d cached peers; retrying in %s",
					nBoot, nCached, wait), "err", firstErr)
				if !h.sleep(wait) {
					return
				}
				wait = min(2*wait, h.cfg.RetryMax)
				continue
			}
			h.log.Info("connected to the network", "answered", answered, "tried", len(seeds))
			_ = h.dht.RefreshRoutingTable() // fills the table now rather than at the next refresh
		}
		wait = h.cfg.RetryMin
		if !h.sleep(isolatedCheck) {
			return
		}
	}
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
