package node

import (
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// Local penalties for peers that sent provably wrong bytes outside gossip (a checkpoint
// chunk or manifest that is not what they announced): each offence lowers the peer's
// gossipsub application score by offencePenalty for offenceMemory, so that about five
// take it below the gossip threshold. They are this node's own view, not the ledger's:
// nothing is slashed.
const (
	offencePenalty = 100.0
	offenceMemory  = time.Hour
	maxPenalised   = 1024 // peers remembered; past it the one whose last offence is oldest goes
)

// penalties remembers recent offences by peer. Safe for concurrent use.
type penalties struct {
	now func() time.Time
	mu  sync.Mutex
	by  map[peer.ID][]time.Time // times of the peer's offences within offenceMemory
}

func newPenalties(now func() time.Time) *penalties {
	return &penalties{now: now, by: map[peer.ID][]time.Time{}}
}

// offence records one offence of p.
func (ps *penalties) offence(p peer.ID) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	now := ps.now()
	if _, ok := ps.by[p]; !ok && len(ps.by) >= maxPenalised {
		ps.evictOldest()
	}
	ps.by[p] = append(ps.recent(p, now), now)
}

// score is p's penalty: -offencePenalty per offence within offenceMemory.
func (ps *penalties) score(p peer.ID) float64 {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	n := len(ps.recent(p, ps.now()))
	if n == 0 {
		delete(ps.by, p)
		return 0
	}
	return -offencePenalty * float64(n)
}

// recent drops p's offences older than offenceMemory and returns the rest.
func (ps *penalties) recent(p peer.ID, now time.Time) []time.Time {
	ts := ps.by[p]
	for len(ts) > 0 && now.Sub(ts[0]) >= offenceMemory {
		ts = ts[1:]
	}
	ps.by[p] = ts
	return ts
}

func (ps *penalties) evictOldest() {
	var oldest peer.ID
	var at time.Time
	for p, ts := range ps.by {
		if len(ts) == 0 {
			delete(ps.by, p)
			return
		}
		if last := ts[len(ts)-1]; oldest == "" || last.Before(at) {
			oldest, at = p, last
		}
	}
	delete(ps.by, oldest)
}
