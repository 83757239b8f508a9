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
// records can be served to a peer that was cut off. It is bounded in bytes: past the
// bound a record is remembered by hash only (not served). The validators keep it to
// staked signers and the rounds of the window; the loop prunes it by round. Safe for
// concurrent use.
type recordBook struct {
	maxBytes int

	mu    sync.Mutex
	bytes int
	held  map[recordKey]heldRecord
	asked map[recordKey][]peer.ID // the forwarders asked for a record the node lacks
}

// heldRecord is a record's hash and its bytes (nil when over the byte bound).
type heldRecord struct {
	hash [32]byte
	data []byte
}

// Bounds of a record book.
const (
	defaultRecordBytes = 64 << 20
	// maxGapAsks is how many forwarders the node asks for one missing record.
	maxGapAsks = 3
)

func newRecordBook(maxBytes int) *recordBook {
	if maxBytes <= 0 {
		maxBytes = defaultRecordBytes
	}
	return &recordBook{maxBytes: maxBytes, held: map[recordKey]heldRecord{}, asked: map[recordKey][]peer.ID{}}
}

// find says whether the book holds the record of k: putNew none, putSame the one of hash,
// putConflict another.
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
	case h.hash == hash:
		return putSame
	}
	return putConflict
}

// put holds data, of hash, as the record of k unless one is held, and says what it found.
func (b *recordBook) put(k recordKey, hash [32]byte, data []byte) putResult {
	b.mu.Lock()
	defer b.mu.Unlock()
	if r := b.findLocked(k, hash); r != putNew {
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
	if h, ok := b.held[k]; ok && h.hash == hash {
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
