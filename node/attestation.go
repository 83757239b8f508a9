package node

import (
	"container/list"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/node/attest"
	"github.com/lowband/lowband/node/core"
	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/verify"
)

// attestor makes the node's own bundle for an epoch, with a fresh ephemeral key, registers
// it and publishes it on the attest topic. Not safe for concurrent use: the loop calls it
// at start and when the epoch changes.
type attestor struct {
	producer     attest.Producer
	identity     crypto.PrivKey
	network, run string
	reg          *registry
	publish      publishFunc
	rand         io.Reader // ephemeral keys; crypto/rand outside tests
}

// publishFunc publishes data on the gossip topic of a kind (p2p.Host.Publish).
type publishFunc func(ctx context.Context, kind string, data []byte) error

// newAttestor returns the attestor of a node whose attestation config is cfg (a relative
// sim key path resolves against home) and whose libp2p identity is identity. It fails when
// the config's producer cannot run here.
func newAttestor(cfg configs.AttestConfig, home string, identity crypto.PrivKey, s *configs.Spec, reg *registry, publish publishFunc) (*attestor, error) {
	p, err := attest.NewProducer(cfg, home)
	if err != nil {
		return nil, err
	}
	return &attestor{producer: p, identity: identity, network: s.NetworkID(), run: s.Run, reg: reg, publish: publish, rand: rand.Reader}, nil
}

// attest makes, registers and publishes the node's bundle for epoch, and returns the new
// signer. The bundle must verify under the network's policy like anyone's: a node whose
// own bundle fails learns it here, not from its peers' silence. A publish error is
// returned with the signer, which is usable: peers also fetch the bundle by hash.
func (a *attestor) attest(ctx context.Context, epoch uint64) (core.Signer, error) {
	pub, key, err := ed25519.GenerateKey(a.rand)
	if err != nil {
		return core.Signer{}, fmt.Errorf("ephemeral key: %w", err)
	}
	b, err := attest.Attest(ctx, a.producer, a.network, a.run, a.identity, epoch, pub)
	if err != nil {
		return core.Signer{}, err
	}
	data, err := b.Marshal()
	if err != nil {
		return core.Signer{}, fmt.Errorf("own bundle: %w", err)
	}
	if _, err := a.reg.add(data, epoch); err != nil {
		return core.Signer{}, fmt.Errorf("own bundle of epoch %d does not verify under the network's policy: %w", epoch, err)
	}
	s := core.Signer{Key: key, Bundle: data, BundleHash: b.Hash()}
	if err := a.publish(ctx, p2p.KindAttest, data); err != nil {
		return s, fmt.Errorf("publishing own bundle: %w", err)
	}
	return s, nil
}

// registry holds the attestation bundles the node has checked, by hash: those that verify
// (served to peers, and the ones shards may be signed under) and, apart, a few that fail
// (a shard signed under one that fails provably is evidence). Bundles are verified with
// the network's policy at the network's nominal time of their epoch (the checker's
// EpochTime, as evidence is), never the clock, and verdicts are cached by hash. Both sets
// are bounded, least recently used first out, and the verified ones hold at most
// maxBundlesPerPeer of one peer, its oldest out first. Safe for concurrent use.
type registry struct {
	ver       *attest.Verifier
	epochTime func(epoch uint64) time.Time
	spent     *cpuMeter

	mu     sync.Mutex
	ok     *lru[*heldBundle]
	bad    *lru[*heldBundle]
	byPeer map[string][][32]byte // the hashes in ok of each peer, oldest first
}

// heldBundle is a decoded bundle, its bytes (shared: never modify) and, for a failed one,
// its verification error.
type heldBundle struct {
	data []byte
	b    *verify.Bundle
	err  error
}

// Registry bounds: verified bundles (at most 64 KiB each), those of one peer, and failed
// ones. An honest node has one bundle an epoch (and a new one if it restarts); one attested
// identity signing bundles for fresh ephemeral keys at will pushes out only its own.
const (
	maxVerifiedBundles = 512
	maxBundlesPerPeer  = 4
	maxFailedBundles   = 64
)

// newRegistry returns an empty registry checking bundles as chk would (its policy and
// time base). Insecure (sim) acceptances are logged to log. spent, when not nil, is
// charged with the time spent verifying.
func newRegistry(chk *incentives.Checker, log *slog.Logger, spent *cpuMeter) *registry {
	return &registry{
		ver: attest.NewVerifier(chk.Policy, maxVerifiedBundles, log), epochTime: chk.EpochTime, spent: spent,
		ok: newLRU[*heldBundle](maxVerifiedBundles), bad: newLRU[*heldBundle](maxFailedBundles),
		byPeer: make(map[string][][32]byte),
	}
}

// add decodes and verifies a bundle at epoch (the current one) and holds it. It returns
// the held bundle (nil when data does not decode) and the verification error. A bundle
// that fails for its epoch alone (stale) is not held: it may verify at another epoch.
func (r *registry) add(data []byte, epoch uint64) (*heldBundle, error) {
	b, err := verify.UnmarshalBundle(data)
	if err != nil {
		return nil, err
	}
	hb := &heldBundle{data: slices.Clone(data), b: b}
	h := b.Hash()
	if old, ok := r.get(h); ok && old.err != nil {
		return old, old.err // failures other than stale do not depend on the epoch
	}
	_, hb.err = r.verify(b, epoch)
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case hb.err == nil:
		r.holdVerified(h, hb)
	case verify.ClassOf(hb.err) != verify.ClassStale:
		r.bad.put(h, hb)
	}
	return hb, hb.err
}

// holdVerified holds a verified bundle, first dropping its peer's oldest when the peer has
// maxBundlesPerPeer held. r.mu is held.
func (r *registry) holdVerified(h [32]byte, hb *heldBundle) {
	p := hb.b.PeerID
	if _, held := r.ok.get(h); !held {
		if hs := r.byPeer[p]; len(hs) >= maxBundlesPerPeer {
			r.ok.remove(hs[0])
			r.byPeer[p] = hs[1:]
		}
		r.byPeer[p] = append(r.byPeer[p], h)
	}
	if old := r.ok.put(h, hb); old != nil {
		q := old.val.b.PeerID
		if hs := slices.DeleteFunc(r.byPeer[q], func(x [32]byte) bool { return x == old.key }); len(hs) > 0 {
			r.byPeer[q] = hs
		} else {
			delete(r.byPeer, q)
		}
	}
}

// get returns the held bundle of a hash, verified or failed.
func (r *registry) get(h [32]byte) (*heldBundle, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if hb, ok := r.ok.get(h); ok {
		return hb, true
	}
	return r.bad.get(h)
}

// bundle returns the bytes of a verified bundle, nil when none has that hash.
func (r *registry) bundle(h [32]byte) []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	if hb, ok := r.ok.get(h); ok {
		return hb.data
	}
	return nil
}

// verdict is the verdict of a held bundle at epoch (the epoch of the round a shard is
// for): from the cache, else verified again; a failed bundle's error.
func (r *registry) verdict(hb *heldBundle, epoch uint64) (*verify.Verdict, error) {
	if hb.err != nil {
		return nil, hb.err
	}
	return r.verify(hb.b, epoch)
}

func (r *registry) verify(b *verify.Bundle, epoch uint64) (*verify.Verdict, error) {
	defer r.spent.stop(r.spent.start())
	return r.ver.VerifyAt(b, epoch, r.epochTime(b.Epoch))
}

// lru is a bounded map by hash that drops its least recently used entry when full. Not
// safe for concurrent use.
type lru[V any] struct {
	cap   int
	order *list.List // of *lruEntry[V], most recent first
	byKey map[[32]byte]*list.Element
}

type lruEntry[V any] struct {
	key [32]byte
	val V
}

func newLRU[V any](capacity int) *lru[V] {
	return &lru[V]{cap: max(capacity, 1), order: list.New(), byKey: make(map[[32]byte]*list.Element)}
}

func (l *lru[V]) get(k [32]byte) (V, bool) {
	el, ok := l.byKey[k]
	if !ok {
		var zero V
		return zero, false
	}
	l.order.MoveToFront(el)
	return el.Value.(*lruEntry[V]).val, true
}

// put holds v under k; when that drops the least recently used entry, it returns it.
func (l *lru[V]) put(k [32]byte, v V) (evicted *lruEntry[V]) {
	if el, ok := l.byKey[k]; ok {
		el.Value.(*lruEntry[V]).val = v
		l.order.MoveToFront(el)
		return nil
	}
	l.byKey[k] = l.order.PushFront(&lruEntry[V]{key: k, val: v})
	if l.order.Len() <= l.cap {
		return nil
	}
	last := l.order.Remove(l.order.Back()).(*lruEntry[V])
	delete(l.byKey, last.key)
	return last
}

// remove drops the entry of k, if any.
func (l *lru[V]) remove(k [32]byte) {
	if el, ok := l.byKey[k]; ok {
		l.order.Remove(el)
		delete(l.byKey, k)
	}
}

// bundle is the attest topic's full check: a bundle not held yet is verified (CPU heavy:
// only when a verification slot is free), held, and the shards waiting on it drained.
func (f *fullChecks) bundle(_ context.Context, fwd peer.ID, data []byte, obj any) (p2p.Result, string) {
	if f.reg.bundle(obj.(*verify.Bundle).Hash()) == nil && fwd != f.cfg.Self {
		if !f.tryHeavy() {
			return p2p.Ignore, reasonBusy
		}
		defer f.releaseHeavy()
	}
	return f.addBundle(data)
}

// addBundle verifies a bundle at the current epoch and holds it, then checks the shards
// stashed while it was unknown (those under a failing bundle become evidence or are
// rejected). A bundle out of its epoch window is ignored (late, or future when ahead).
func (f *fullChecks) addBundle(data []byte) (p2p.Result, string) {
	epoch := f.view.Load().Epoch
	hb, err := f.reg.add(data, epoch)
	stale := verify.ClassOf(err) == verify.ClassStale
	if hb != nil && !stale {
		f.drain(hb.b.Hash())
	}
	switch {
	case err == nil:
		return p2p.Accept, reasonOK
	case stale && hb.b.Epoch > epoch:
		return p2p.Ignore, reasonFuture
	case stale:
		return p2p.Ignore, reasonLate
	}
	return p2p.Reject, reasonBundleInvalid
}

// drain checks the shards stashed under a bundle hash now that the bundle is held, their
// signatures in one batch, counting each result as the shards topic's.
func (f *fullChecks) drain(h [32]byte) {
	var all, signed []*waiting
	for _, data := range f.stash.Take(string(h[:])) {
		w := &waiting{data: data}
		if w.r, w.reason = f.prepare(w); w.r == p2p.Accept {
			signed = append(signed, w)
		}
		all = append(all, w)
	}
	shards, keys := make([]*verify.Shard, len(signed)), make([]ed25519.PublicKey, len(signed))
	for i, w := range signed {
		shards[i], keys[i] = w.s, w.key
	}
	errs := f.checkSignatures(shards, keys)
	for i, w := range signed {
		w.r, w.reason = p2p.Reject, reasonSignature
		if errs[i] == nil {
			w.r, w.reason = f.checked(w.s, w.data, w.hb, false)
		}
	}
	for _, w := range all {
		f.cfg.Metrics.counted(p2p.KindShards, w.r, w.reason)
	}
}

// waiting is a shard's bytes on their way through the checks: what prepare found.
type waiting struct {
	data   []byte
	s      *verify.Shard
	hb     *heldBundle
	key    ed25519.PublicKey
	r      p2p.Result
	reason string
}

// prepare runs the checks of a shard's bytes that came other than by gossip (stash,
// fetch) up to its signature, without fetching an unknown bundle: wire, window, bundle
// held and verified for the round, peer.
func (f *fullChecks) prepare(w *waiting) (p2p.Result, string) {
	obj, r, reason := f.cfg.Wire.shard(w.data)
	if r != p2p.Accept {
		return r, reason
	}
	w.s = obj.(*verify.Shard)
	if r, reason := window(*f.view.Load(), w.s.Header.Round); r != p2p.Accept {
		return r, reason
	}
	var ok bool
	if w.hb, ok = f.reg.get([32]byte(w.s.Header.BundleHash)); !ok {
		return p2p.Ignore, reasonBundleUnknown
	}
	w.key, r, reason = f.attestedKey(w.s, w.hb)
	return r, reason
}

// recheck runs every check on a shard's bytes that came other than by gossip.
func (f *fullChecks) recheck(data []byte) (p2p.Result, string) {
	w := &waiting{data: data}
	if r, reason := f.prepare(w); r != p2p.Accept {
		return r, reason
	}
	if err := f.checkSignature(w.s, w.key); err != nil {
		return p2p.Reject, reasonSignature
	}
	return f.checked(w.s, data, w.hb, false)
}
