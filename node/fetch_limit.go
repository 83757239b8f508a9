package node

import (
	"errors"
	"sync"
	"time"

	golru "github.com/hashicorp/golang-lru/v2"
	"github.com/libp2p/go-libp2p/core/peer"
	"golang.org/x/time/rate"
)

// The fetch server's per-peer budget: each request spends tokens from its peer's bucket,
// refilled at fetchRate a second up to fetchBurst. A checkpoint sync of the default task
// (about 100 chunks of 256 KiB, 4 in flight) fits one burst; a request that reads a whole
// stored round (a shard by CID, a committed record) costs more. A peer over its budget has
// its stream reset (errFetchRateLimited) and tries another peer.
const (
	fetchRate       = 32
	fetchBurst      = 512
	fetchCostHeavy  = 4
	fetchPeersKept  = 4096 // buckets remembered; the least recently seen peer is forgotten
	fetchCostSimple = 1
)

// errFetchRateLimited: the requesting peer spent its fetch budget.
var errFetchRateLimited = errors.New("fetch: peer over its request budget")

// fetchLimits keeps one token bucket per requesting peer, for at most fetchPeersKept peers.
type fetchLimits struct {
	mu      sync.Mutex
	buckets *golru.Cache[peer.ID, *rate.Limiter]
	refused func() // counts a refused request; may be nil
	now     func() time.Time
}

func newFetchLimits(refused func()) *fetchLimits {
	c, err := golru.New[peer.ID, *rate.Limiter](fetchPeersKept)
	if err != nil {
		panic(err) // only for a size below 1
	}
	return &fetchLimits{buckets: c, refused: refused, now: time.Now}
}

// allow spends the cost of a request of kind from p's bucket; false when it is empty.
func (l *fetchLimits) allow(p peer.ID, kind byte) bool {
	cost := fetchCostSimple
	if kind == fetchStoredShard || kind == fetchCommitted || kind == fetchCommittedSame || kind == fetchCommittedDigest {
		cost = fetchCostHeavy
	}
	l.mu.Lock()
	b, ok := l.buckets.Get(p)
	if !ok {
		b = rate.NewLimiter(fetchRate, fetchBurst)
		l.buckets.Add(p, b)
	}
	l.mu.Unlock()
	if b.AllowN(l.now(), cost) {
		return true
	}
	if l.refused != nil {
		l.refused()
	}
	return false
}
