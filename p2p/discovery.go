package p2p

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/discovery"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
)

const (
	// advertiseFirst is the first interval between looks at whether to advertise
	// again; it doubles up to advertiseMax, so that early advertisements made with a
	// thin routing table are repeated soon while a settled host advertises rarely
	// (readvertise).
	advertiseFirst = 5 * time.Second
	advertiseMax   = 10 * time.Minute
	// readvertiseEvery is how long a settled host goes between advertisements whose
	// table and addresses stay as they were. A provider record lives 48 hours on the
	// DHT nodes that took it (kad-dht's provide validity); an advertisement is a lookup
	// of the nearest peers, each answering with its own nearest, and a record put on
	// each: in a swarm of 16 that started together, the hosts' advertisements and table
	// refreshes, all ten minutes in, cost each host 70-90 KB in each of three rounds. An
	// hour still puts the record on nodes that came near the key since, long before the
	// old ones drop it.
	readvertiseEvery = time.Hour
	// emptyRetry is the first wait before retrying an advertisement that failed
	// (typically because the routing table was still empty); it doubles up to
	// emptyRetryMax, far below the discovery library's fixed two minutes.
	emptyRetry    = 250 * time.Millisecond
	emptyRetryMax = 15 * time.Second
	// findFirst and findMax bound the interval between rendezvous lookups: back to
	// findFirst after a lookup that found more peers than the one before or
	// connected someone new, doubling otherwise.
	findFirst = time.Second
	findMax   = 30 * time.Second
	// findIdleFirst and findIdleMax bound the interval instead while lookups find no peer
	// the host is not connected to already (a swarm smaller than findTarget, all
	// connected), once the host's own advertisement has landed (settled): each lookup
	// costs every DHT node it asks a reply listing the advertised peers, tens of KB a
	// lookup in a swarm of 16, for nothing; a newcomer finds and dials the host itself.
	findIdleFirst = time.Minute
	findIdleMax   = 10 * time.Minute
	// findTimeout bounds one rendezvous lookup; dialParallel bounds its dials.
	findTimeout  = 30 * time.Second
	dialParallel = 8
)

// advertiseLoop advertises the host under the run's rendezvous string in the DHT
// and re-advertises with a growing interval. A failed advertisement is retried
// after a short, growing wait.
func (h *Host) advertiseLoop() {
	defer h.wg.Done()
	ns := Rendezvous(h.cfg.Network, h.cfg.Run)
	retry, next := emptyRetry, advertiseFirst
	for {
		if h.RoutingTableSize() == 0 {
			if !h.sleep(retry) {
				return
			}
			retry = min(2*retry, emptyRetryMax)
			continue
		}
		t0 := time.Now()
		_, err := h.disc.Advertise(h.ctx, ns, discovery.TTL(readvertiseEvery))
		h.log.Debug("advertised", "took", time.Since(t0), "err", err)
		if err == nil {
			h.advertised.CompareAndSwap(0, time.Now().UnixNano())
		}
		if err != nil {
			if h.ctx.Err() != nil {
				return
			}
			h.log.Debug("advertise failed; retrying", "err", err, "in", retry)
			if !h.sleep(retry) {
				return
			}
			retry = min(2*retry, emptyRetryMax)
			continue
		}
		retry = emptyRetry
		// Sleep through the doubling schedule (a look at least every advertiseMax) until
		// the table has grown by half since this advertisement, the host's addresses
		// have changed, or readvertiseEvery has passed.
		size, addrs, since := h.RoutingTableSize(), addrsKey(h.h.Addrs()), time.Duration(0)
		for {
			if !h.sleep(next) {
				return
			}
			since += next
			next = min(2*next, advertiseMax)
			if readvertise(size, h.RoutingTableSize(), since) || addrsKey(h.h.Addrs()) != addrs {
				break
			}
		}
	}
}

// addrsKey is a set of addresses as one comparable string.
func addrsKey(addrs []ma.Multiaddr) string {
	out := make([]string, len(addrs))
	for i, a := range addrs {
		out[i] = a.String()
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

// readvertise reports whether a host that advertised with a routing table of was peers,
// since ago, advertises again with a table of now: once the table has grown by half (an
// advertisement made with a thin table reached few of the peers nearest the rendezvous
// key), or after readvertiseEvery, long before the provider records expire. (A host whose
// own addresses changed, such as a relay reservation behind a NAT, advertises again too:
// the nearest peers hand out the addresses they were given with the record.) Each
// advertisement is a DHT lookup and a provider record to each of the nearest peers, tens
// of KB: a host whose table stays as it was has little to gain from another before then.
func readvertise(was, now int, since time.Duration) bool {
	return since >= readvertiseEvery || 2*now >= 3*was && now > was
}

// findPeersLoop looks up the run's rendezvous string and connects to peers it
// finds while the host has fewer connections than it seeks (findTarget). A host
// with enough connections does not look: every lookup costs the DHT nodes nearest
// the rendezvous key a reply listing every advertised peer. An idle host (its last
// look found every advertised peer connected, after its own advertisement landed:
// nextFind) looks near instead (nearLook), at an eighth of a lookup's bytes in a
// swarm of 16; a near look that finds someone new makes the next look a whole lookup again.
func (h *Host) findPeersLoop() {
	defer h.wg.Done()
	wait, lastFound, idle := findFirst, 0, false
	for {
		switch {
		case h.RoutingTableSize() == 0:
			wait, idle = emptyRetry, false
		case len(h.h.Network().Peers()) >= h.findTarget():
			wait, idle = min(2*wait, findMax), false
		default:
			// A lookup that begins after the host's own advertisement landed is settled.
			settled := h.advertised.Load() != 0
			look := h.lookup
			if idle {
				look = h.nearLook
			}
			found, fresh, connected := h.findOnce(look)
			wait, idle = nextFind(wait, found, lastFound, fresh, connected, settled)
			lastFound = found
		}
		if !h.sleep(wait) {
			return
		}
	}
}

// nextFind is the wait after a lookup that found found peers (lastFound the one before),
// fresh of them not connected (nor found unreachable lately), and connected newly: back
// to findFirst when it connected someone or found more peers it is not connected to;
// doubling otherwise, up to findMax, or, when it found peers, all of them connected, and
// was settled (it began after the host's own advertisement had landed), from
// findIdleFirst up to findIdleMax, the host then idle (the next look is a near one).
//
// Settled is what makes the long waits safe: were hosts X and Y unconnected with both
// idle, X's settled lookup missed Y's advertisement, so it began before Y's landed, and
// after X's own had; Y's settled lookup began after Y's advertisement landed, so it found
// X's, and Y dialed X (a host with its findTarget of connections does not need X).
func nextFind(wait time.Duration, found, lastFound, fresh, connected int, settled bool) (next time.Duration, idle bool) {
	switch {
	case connected > 0 || found > lastFound && fresh > 0:
		return findFirst, false
	case fresh == 0 && found > 0 && settled:
		return min(max(2*wait, findIdleFirst), findIdleMax), true
	}
	return min(2*wait, findMax), false // a lookup that failed, found no one, or began before the host was findable
}

// findTarget is how many connected peers the host seeks through the rendezvous:
// twice gossipsub's upper mesh degree, so that every topic's mesh can fill and be
// renewed from peers already connected, and at most the connection manager's low
// watermark. The watermarks say where the connection manager trims to, not how
// many peers to dial: dialing up to them made every host of a large swarm hold
// dozens of connections, each with its handshake, streams and buffers.
func (h *Host) findTarget() int {
	return min(h.cfg.ConnLow, 2*pubsub.DefaultGossipSubParams().Dhi)
}

// findOnce runs one rendezvous look and dials the peers found, in random order
// (every host gets the same list, in the same order, from the DHT), until the host
// has findTarget connections. It returns how many peers it found, how many of them it
// was not connected to (itself aside, and those a dial failed to lately: unreachable),
// and how many of those it newly connected.
func (h *Host) findOnce(look func(context.Context) ([]peer.AddrInfo, error)) (found, fresh, connected int) {
	t0 := time.Now()
	ctx, cancel := context.WithTimeout(h.ctx, findTimeout)
	defer cancel()
	h.met.lookups.Inc()
	peers, err := look(ctx)
	if err != nil {
		h.log.Debug("rendezvous lookup failed", "err", err)
		return 0, 0, 0
	}
	for _, ai := range peers {
		h.found.add(ai.ID)
	}
	rand.Shuffle(len(peers), func(i, j int) { peers[i], peers[j] = peers[j], peers[i] })
	var (
		n   atomic.Int64
		wg  sync.WaitGroup
		sem = make(chan struct{}, dialParallel)
	)
	for _, ai := range peers {
		if ai.ID == h.h.ID() || len(h.h.Network().ConnsToPeer(ai.ID)) > 0 {
			continue
		}
		if len(ai.Addrs) == 0 && len(h.h.Peerstore().Addrs(ai.ID)) == 0 {
			continue // no address to dial it at: no reason to look again soon
		}
		// A peer a dial failed to lately is dialed again (a start that was not listening
		// yet, a busy host), but does not bring the next look sooner.
		if !h.unreachable.has(ai.ID, t0) {
			fresh++
		}
		sem <- struct{}{}
		if !h.wantPeer(ai) {
			<-sem
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if h.h.Connect(ctx, ai) == nil {
				n.Add(1)
			} else {
				h.unreachable.add(ai.ID, time.Now())
			}
		}()
	}
	wg.Wait()
	h.log.Debug("rendezvous lookup", "found", len(peers), "fresh", fresh, "connected", n.Load(), "took", time.Since(t0))
	return len(peers), fresh, int(n.Load())
}

// lookup asks the DHT which peers advertised the run's rendezvous string: a whole
// lookup, which asks the peers nearest the key it learns of until none is nearer.
func (h *Host) lookup(ctx context.Context) ([]peer.AddrInfo, error) {
	ch, err := h.disc.FindPeers(ctx, Rendezvous(h.cfg.Network, h.cfg.Run), discovery.Limit(0))
	if err != nil {
		return nil, err
	}
	var peers []peer.AddrInfo
	for ai := range ch {
		peers = append(peers, ai)
	}
	return peers, nil
}

// LookupRendezvous asks the DHT which peers advertised the run's rendezvous
// string, without connecting to them. It returns what it found when ctx ends.
// The result is sorted by ID and may include the host itself.
func (h *Host) LookupRendezvous(ctx context.Context) ([]peer.AddrInfo, error) {
	ch, err := h.disc.FindPeers(ctx, Rendezvous(h.cfg.Network, h.cfg.Run), discovery.Limit(0))
	if err != nil {
		return nil, fmt.Errorf("rendezvous lookup: %w", err)
	}
	var out []peer.AddrInfo
	for ai := range ch {
		out = append(out, ai)
		h.found.add(ai.ID)
	}
	slices.SortFunc(out, func(a, b peer.AddrInfo) int { return strings.Compare(string(a.ID), string(b.ID)) })
	return out, nil
}

// FoundAdvertised reports whether a rendezvous lookup of this host (its own, or
// LookupRendezvous) found p among the run's advertised peers. Unlike the topics' peers,
// which are the host's own neighbours, the rendezvous lists the whole swarm; but it is no
// proof that p is up: a DHT node takes a provider record only from the provider itself,
// yet its reply to a lookup may list any ID, and a record lives two days.
func (h *Host) FoundAdvertised(p peer.ID) bool { return h.found.has(p) }

// foundMax bounds the peers foundPeers remembers: past it, no more are added.
const foundMax = 1 << 16

// foundPeers is a set of peer IDs, at most foundMax. Safe for concurrent use.
type foundPeers struct {
	mu  sync.Mutex
	ids map[peer.ID]struct{}
}

func (f *foundPeers) add(p peer.ID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ids == nil {
		f.ids = map[peer.ID]struct{}{}
	}
	if len(f.ids) < foundMax {
		f.ids[p] = struct{}{}
	}
}

func (f *foundPeers) has(p peer.ID) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.ids[p]
	return ok
}

// unreachableFor is how long a found peer that could not be dialed does not count as
// fresh: a provider record lives 48 hours, and one of a node that left (or of a peer that
// advertises and refuses connections) would otherwise keep every host of a small swarm
// from going idle, a whole lookup every findMax. After it, one more dial is tried.
const unreachableFor = findIdleMax

// unreachableMax bounds the peers unreachablePeers remembers: past it, the oldest go.
const unreachableMax = 1024

// unreachablePeers is when a dial to each of a few found peers last failed. Safe for
// concurrent use.
type unreachablePeers struct {
	mu    sync.Mutex
	since map[peer.ID]time.Time
}

func (u *unreachablePeers) add(p peer.ID, now time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.since == nil {
		u.since = map[peer.ID]time.Time{}
	}
	for q, t := range u.since {
		if now.Sub(t) >= unreachableFor {
			delete(u.since, q)
		}
	}
	if _, ok := u.since[p]; !ok && len(u.since) >= unreachableMax {
		oldest, at := peer.ID(""), now
		for q, t := range u.since {
			if t.Before(at) || t.Equal(at) && q < oldest {
				oldest, at = q, t
			}
		}
		delete(u.since, oldest)
	}
	u.since[p] = now
}

// has reports whether a dial to p failed less than unreachableFor before now.
func (u *unreachablePeers) has(p peer.ID, now time.Time) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	t, ok := u.since[p]
	return ok && now.Sub(t) < unreachableFor
}

// wantPeer reports whether a found peer is worth dialing.
func (h *Host) wantPeer(ai peer.AddrInfo) bool {
	if ai.ID == h.h.ID() {
		return false
	}
	if len(ai.Addrs) == 0 && len(h.h.Peerstore().Addrs(ai.ID)) == 0 {
		return false
	}
	if len(h.h.Network().ConnsToPeer(ai.ID)) > 0 {
		return false
	}
	return len(h.h.Network().Peers()) < h.findTarget()
}
