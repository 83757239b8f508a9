package node

import (
	"bytes"
	"slices"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/incentives"
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
// takeAside). A vote that came as a reference (incentives.VoteRef) is held at once by its
// digest, waiting (putRef) until its record is found and it reaches the loop (claim). The
// book also keeps the records themselves by digest (addBody, body), within the same byte
// bound, so that a peer holding a reference asks for its record once. Safe for
// concurrent use.
type recordBook struct {
	maxBytes int

	mu     sync.Mutex
	bytes  int
	held   map[recordKey]heldRecord
	asked  map[recordKey][]peer.ID // the peers asked for a record the node lacks
	flight map[peer.ID]int         // record fetches in flight by peer

	aside      map[recordKey]asideRecord // records of signers that were no voters yet
	asideBytes int

	bodies map[[32]byte]recordBody // records by digest (incentives.RecordDigest)
}

// recordBody is a record's canonical bytes and its round.
type recordBody struct {
	round uint64
	data  []byte
}

// asideRecord is a record ignored because its signer was no voter of the view then, kept
// to be checked again when the view's voters change, and the neighbour that forwarded it.
type asideRecord struct {
	key  recordKey
	fwd  peer.ID
	data []byte
}

// heldRecord is a vote's record digest (incentives.RecordDigest), its signature and its
// signed bytes (nil when over the byte bound or not found yet), and the digest and
// signature of the signer's first other record for the round, if one came (a vote cast
// twice: it is forwarded once so that every node holds both, and not served). waitFirst
// and waitOther: that vote came as a reference whose record has not reached the loop yet.
type heldRecord struct {
	hash      [32]byte
	sig       []byte
	data      []byte
	other     *[32]byte
	otherSig  []byte
	waitFirst bool
	waitOther bool
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
		flight: map[peer.ID]int{}, aside: map[recordKey]asideRecord{}, bodies: map[[32]byte]recordBody{}}
}

// find says whether the book holds the vote of k for the record of digest hash, signed
// sig: putNew none, putSame that one (first or second), putResigned that record under
// another signature, putConflict another record and no second yet, putRepeated a first
// and a second, neither of hash.
func (b *recordBook) find(k recordKey, hash [32]byte, sig []byte) putResult {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.findLocked(k, hash, sig)
}

func (b *recordBook) findLocked(k recordKey, hash [32]byte, sig []byte) putResult {
	h, ok := b.held[k]
	switch {
	case !ok:
		return putNew
	case h.hash == hash:
		return sameOrResigned(h.sig, sig)
	case h.other != nil && *h.other == hash:
		return sameOrResigned(h.otherSig, sig)
	case h.other == nil:
		return putConflict
	}
	return putRepeated
}

func sameOrResigned(held, sig []byte) putResult {
	if bytes.Equal(held, sig) {
		return putSame
	}
	return putResigned
}

// put holds data, the signed vote of k for the record of digest hash under sig, unless
// one is held, or notes hash as the second record of k when only a first is held, and
// says what it found (find): putNew and putConflict are the ones it took.
func (b *recordBook) put(k recordKey, hash [32]byte, sig, data []byte) putResult {
	return b.putAs(k, hash, sig, data, false)
}

// putRef is put for a vote that came as a reference: it holds the digest and signature,
// waiting for the record (claim).
func (b *recordBook) putRef(k recordKey, hash [32]byte, sig []byte) putResult {
	return b.putAs(k, hash, sig, nil, true)
}

func (b *recordBook) putAs(k recordKey, hash [32]byte, sig, data []byte, wait bool) putResult {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch r := b.findLocked(k, hash, sig); r {
	case putConflict:
		h := b.held[k]
		h.other, h.otherSig, h.waitOther = &hash, bytes.Clone(sig), wait
		b.held[k] = h
		return r
	case putNew:
	default:
		return r
	}
	b.held[k] = heldRecord{hash: hash, sig: bytes.Clone(sig), waitFirst: wait}
	b.keepData(k, data)
	delete(b.asked, k)
	return putNew
}

// firstOther is the vote of k held other than the one of digest hash (its digest and
// signature), for a double vote; false when none is.
func (b *recordBook) firstOther(k recordKey, hash [32]byte) (incentives.Vote, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	h, ok := b.held[k]
	switch {
	case !ok:
		return incentives.Vote{}, false
	case h.hash != hash:
		return incentives.Vote{Digest: bytes.Clone(h.hash[:]), Sig: h.sig}, true
	case h.other != nil:
		return incentives.Vote{Digest: bytes.Clone(h.other[:]), Sig: h.otherSig}, true
	}
	return incentives.Vote{}, false
}

// keepData keeps data as the signed bytes of k's first record, within the byte bound.
// b.mu is held.
func (b *recordBook) keepData(k recordKey, data []byte) {
	h, ok := b.held[k]
	if !ok || h.data != nil || len(data) == 0 || b.bytes+len(data) > b.maxBytes {
		return
	}
	h.data = slices.Clone(data)
	b.bytes += len(data)
	b.held[k] = h
}

// claim takes the vote of hash for k out of waiting, once: true for the one caller that
// is to hand it to the loop. data, its signed bytes, is kept to be served when it is k's
// first record. unclaim puts it back (the loop's inbox was full).
func (b *recordBook) claim(k recordKey, hash [32]byte, data []byte) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	h, ok := b.held[k]
	switch {
	case ok && h.waitFirst && h.hash == hash:
		h.waitFirst = false
		b.held[k] = h
		b.keepData(k, data)
		return true
	case ok && h.waitOther && h.other != nil && *h.other == hash:
		h.waitOther = false
		b.held[k] = h
		return true
	}
	return false
}

func (b *recordBook) unclaim(k recordKey, hash [32]byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	h, ok := b.held[k]
	switch {
	case ok && h.hash == hash:
		h.waitFirst = true
	case ok && h.other != nil && *h.other == hash:
		h.waitOther = true
	default:
		return
	}
	b.held[k] = h
}

// waiting reports whether the vote of hash for k came as a reference and has not reached
// the loop.
func (b *recordBook) waiting(k recordKey, hash [32]byte) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	h, ok := b.held[k]
	return ok && (h.waitFirst && h.hash == hash || h.waitOther && h.other != nil && *h.other == hash)
}

// addBody keeps record, of round and of digest hash, to be found by digest, within the
// byte bound, and reports whether it is kept.
func (b *recordBook) addBody(round uint64, hash [32]byte, record []byte) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.bodies[hash]; ok {
		return true
	}
	if b.bytes+len(record) > b.maxBytes {
		return false
	}
	b.bodies[hash] = recordBody{round: round, data: slices.Clone(record)}
	b.bytes += len(record)
	return true
}

// body returns the record of digest hash, nil if none is kept. The bytes are shared.
func (b *recordBook) body(hash [32]byte) []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.bodies[hash].data
}

// remove undoes the put of the record of hash for k, which the loop never received. A
// second vote held stays, as the first: removing the first never forgets that the signer
// voted twice, nor a vote the loop has.
func (b *recordBook) remove(k recordKey, hash [32]byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	h, ok := b.held[k]
	switch {
	case ok && h.other != nil && *h.other == hash:
		h.other, h.otherSig, h.waitOther = nil, nil, false
		b.held[k] = h
	case ok && h.hash == hash && h.other != nil:
		b.bytes -= len(h.data)
		b.held[k] = heldRecord{hash: *h.other, sig: h.otherSig, waitFirst: h.waitOther}
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
	if b.holdsLocked(k) || len(b.asked[k]) >= maxGapAsks || slices.Contains(b.asked[k], fwd) {
		return false
	}
	b.asked[k] = append(b.asked[k], fwd)
	return true
}

// holdsLocked reports whether the book holds k's first record other than as a reference
// still waiting for its record (a gap fetch may bring it whole). b.mu is held.
func (b *recordBook) holdsLocked(k recordKey) bool {
	h, ok := b.held[k]
	return ok && !h.waitFirst
}

// another picks, after a failed fetch of the record of k, the first of peers (not self)
// not asked for it yet with fewer than maxGapsPerPeer fetches in flight, and notes it as
// asked; false when the book holds the record or no peer fits.
func (b *recordBook) another(k recordKey, peers []peer.ID, self peer.ID) (peer.ID, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.holdsLocked(k) || len(b.asked[k]) >= maxGapAsks+maxGapFallbacks {
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
	for h, r := range b.bodies {
		if r.round < round {
			delete(b.bodies, h)
			b.bytes -= len(r.data)
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
