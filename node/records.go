package node

import (
	"slices"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"
)

// recordKey names one vote: a signer's record of a round.
type recordKey struct {
	round  uint64
	signer string
}

// recordBook holds the signed records the node accepted (its own and its peers') for the
// rounds open to repair and the next ones, the first of each signer for each round, so
// that a record reaches the loop once, a second one of the signer is told apart, and the
// records can be served to a peer that was cut off; of a signer that signed two records
// for a round, the second is let through once (by hash: not served). It is bounded in bytes: past the
// bound a record is remembered by hash only (not served). The validators keep it to
// staked signers and the rounds of the window; the loop prunes it by round. Apart, it
// sets aside a few records of signers that were no voters of the view yet (setAside,
// takeAside). Safe for concurrent use.
type recordBook struct {
	maxBytes int

	mu     sync.Mutex
	bytes  int
	held   map[recordKey]heldRecord
	asked  map[recordKey][]peer.ID // the peers asked for a record the node lacks
	flight map[peer.ID]int         // record fetches in flight by peer

	aside      map[recordKey]asideRecord // records of signers that were no voters yet
	asideBytes int
}

// asideRecord is a record ignored because its signer was no voter of the view then, kept
// to be checked again when the view's voters change, and the neighbour that forwarded it.
type asideRecord struct {
	key  recordKey
	fwd  peer.ID
	data []byte
}

// heldRecord is a record's hash and its bytes (nil when over the byte bound), and the
// hash of the signer's first other record for the round, if one came (a vote cast twice:
// it is forwarded once so that every node holds both, and not served).
type heldRecord struct {
	hash  [32]byte
	data  []byte
	other *[32]byte
}

// Bounds of a record book.
const (
	defaultRecordBytes = 64 << 20
	// maxGapAsks is how many forwarders the node asks for one missing record.
	maxGapAsks = 3
	// maxGapFallbacks is how many other peers it asks after a failed fetch of one.
	maxGapFallbacks = 3
	// maxGapsPerPeer bounds the record fetches in flight to one peer.
	maxGapsPerPeer = 2
	// maxAside and maxAsideBytes bound the records set aside: past them a record is
	// not kept (its signer's next record still shows the gap, and it is fetched then).
	maxAside      = 64
	maxAsideBytes = 4 << 20
)

func newRecordBook(maxBytes int) *recordBook {
	if maxBytes <= 0 {
		maxBytes = defaultRecordBytes
	}
	return &recordBook{maxBytes: maxBytes, held: map[recordKey]heldRecord{}, asked: map[recordKey][]peer.ID{},
		flight: map[peer.ID]int{}, aside: map[recordKey]asideRecord{}}
}

// find says whether the book holds the record of k: putNew none, putSame the one of hash
// (first or second), putConflict another and no second yet, putRepeated a first and a
// second, neither of hash.
func (b *recordBook) find(k recordKey, hash [32]byte) putResult {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.findLocked(k, hash)
}

func (b *recordBook) findLocked(k recordKey, hash [32]byte) putResult {
	h, ok := b.held[k]
	switch {
	case !ok:
		return putNew
	case h.hash == hash || h.other != nil && *h.other == hash:
		return putSame
	case h.other == nil:
		return putConflict
	}
	return putRepeated
}

// put holds data, of hash, as the record of k unless one is held, or notes hash as the
// second record of k when only a first is held, and says what it found: putNew and
// putConflict are the ones it took.
func (b *recordBook) put(k recordKey, hash [32]byte, data []byte) putResult {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch r := b.findLocked(k, hash); r {
	case putConflict:
		h := b.held[k]
		h.other = &hash
		b.held[k] = h
		return r
	case putNew:
	default:
		return r
	}
	h := heldRecord{hash: hash}
	if b.bytes+len(data) <= b.maxBytes {
		h.data = slices.Clone(data)
		b.bytes += len(data)
	}
	b.held[k] = h
	delete(b.asked, k)
	return putNew
}

// remove undoes the put of the record of hash for k, which the loop never received.
func (b *recordBook) remove(k recordKey, hash [32]byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	h, ok := b.held[k]
	switch {
	case ok && h.other != nil && *h.other == hash:
		h.other = nil
		b.held[k] = h
	case ok && h.hash == hash:
		b.drop(k, h)
	}
}

// get returns the held bytes of the record of k, nil if none. The bytes are shared.
func (b *recordBook) get(k recordKey) []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held[k].data
}

// ask reports whether fwd should be asked for the record of k: the book lacks it, and
// fewer than maxGapAsks forwarders, not fwd, were asked; if so it notes fwd as asked.
func (b *recordBook) ask(k recordKey, fwd peer.ID) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.held[k]; ok || len(b.asked[k]) >= maxGapAsks || slices.Contains(b.asked[k], fwd) {
		return false
	}
	b.asked[k] = append(b.asked[k], fwd)
	return true
}

// another picks, after a failed fetch of the record of k, the first of peers (not self)
// not asked for it yet with fewer than maxGapsPerPeer fetches in flight, and notes it as
// asked; false when the book holds the record or no peer fits.
func (b *recordBook) another(k recordKey, peers []peer.ID, self peer.ID) (peer.ID, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.held[k]; ok || len(b.asked[k]) >= maxGapAsks+maxGapFallbacks {
		return "", false
	}
	for _, p := range peers {
		if p != self && !slices.Contains(b.asked[k], p) && b.flight[p] < maxGapsPerPeer {
			b.asked[k] = append(b.asked[k], p)
			return p, true
		}
	}
	return "", false
}

// startAsk counts a record fetch to p in flight; false when maxGapsPerPeer are. endAsk
// ends it.
func (b *recordBook) startAsk(p peer.ID) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.flight[p] >= maxGapsPerPeer {
		return false
	}
	b.flight[p]++
	return true
}

func (b *recordBook) endAsk(p peer.ID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.flight[p]--; b.flight[p] <= 0 {
		delete(b.flight, p)
	}
}

// prune forgets the records of rounds before round.
func (b *recordBook) prune(round uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for k, h := range b.held {
		if k.round < round {
			b.drop(k, h)
		}
	}
	for k := range b.asked {
		if k.round < round {
			delete(b.asked, k)
		}
	}
}

// drop forgets one held record. b.mu is held.
func (b *recordBook) drop(k recordKey, h heldRecord) {
	delete(b.held, k)
	b.bytes -= len(h.data)
}

// setAside keeps data, the record of k that fwd forwarded and whose signer is no voter
// of the view yet, unless one of k is kept already or the bounds (maxAside records,
// maxAsideBytes) are reached. The bytes are copied.
func (b *recordBook) setAside(k recordKey, fwd peer.ID, data []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.aside[k]; ok || len(b.aside) >= maxAside || b.asideBytes+len(data) > maxAsideBytes {
		return
	}
	b.aside[k] = asideRecord{key: k, fwd: fwd, data: slices.Clone(data)}
	b.asideBytes += len(data)
}

// takeAside forgets the records set aside of rounds before from, and removes and returns
// those whose signer is a voter now, in no particular order.
func (b *recordBook) takeAside(from uint64, voter func(signer string) bool) []asideRecord {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []asideRecord
	for k, a := range b.aside {
		take := k.round >= from && voter(k.signer)
		if take || k.round < from {
			delete(b.aside, k)
			b.asideBytes -= len(a.data)
		}
		if take {
			out = append(out, a)
		}
	}
	return out
}
