package node

import (
	"context"
	"crypto/ed25519"
	"log/slog"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/node/attest"
	"github.com/lowband/lowband/node/core"
	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/verify"
)

// Reasons a gossip message gets its result, the labels of the verdicts counter. A
// fixed set, so that a peer cannot grow the metric.
const (
	reasonOK      = "ok"      // passed every check the node runs
	reasonSize    = "size"    // over the topic's size cap; not decoded
	reasonDecode  = "decode"  // not a well-formed object of the topic's kind
	reasonNetwork = "network" // signed for another network
	reasonRun     = "run"     // signed for another run of this network

	reasonLate          = "late"           // for a round just closed, or a bundle out of its epoch window
	reasonReplay        = "replay"         // for a round long closed: replayed
	reasonFuture        = "future"         // for a round too far ahead to judge yet
	reasonBundleUnknown = "bundle_unknown" // signed under a bundle not seen yet: stashed, fetched
	reasonBundleInvalid = "bundle_invalid" // signed under a bundle that does not verify
	reasonSignature     = "signature"      // not signed by the key its bundle attests
	reasonPeerMismatch  = "peer_mismatch"  // names a peer other than its bundle's
	reasonContent       = "content"        // fails the content checks (evidence made)
	reasonDue           = "due"            // carries a tensor not due in its round, or, whole, lacks a due one (dueCheck; no evidence)
	reasonBusy          = "busy"           // the loop's inbox or the verification slots are full
	reasonEvidence      = "evidence"       // evidence that proves nothing
	reasonEquivocation  = "equivocation"   // a third different shard or more for one slot: the second proved it
	reasonUnstaked      = "unstaked"       // a record whose signer holds no stake: it carries no weight
	reasonSecondRecord  = "second_record"  // a third different record of a signer for a round or more: the second proved the double vote
	reasonBodyUnknown   = "record_unknown" // a vote reference whose record no peer asked sent
	reasonResigned      = "resigned"       // a vote or shard held already, under another valid signature
)

// reasons is the set of every reason.
var reasons = []string{reasonOK, reasonSize, reasonDecode, reasonNetwork, reasonRun, reasonLate,
	reasonReplay, reasonFuture, reasonBundleUnknown, reasonBundleInvalid, reasonSignature,
	reasonPeerMismatch, reasonContent, reasonDue, reasonBusy, reasonEvidence, reasonEquivocation, reasonUnstaked,
	reasonSecondRecord, reasonBodyUnknown, reasonResigned}

// shardEnvelope bounds what a shard adds to its payload (header, signature, framing):
// the size cap of the shards topic is the spec's shard payload limit plus this. verify's
// decoder applies its exact limit after.
const shardEnvelope = 4 << 10

// wireCheck is one topic's check on the bytes alone, needing no model, ledger or
// verifier: pure, cheapest check first. It returns what it decoded (a *verify.Shard,
// *verify.Bundle, a recordIn or an *incentives.Evidence; nil when refused), the result
// and one of the reasons.
type wireCheck func(data []byte) (any, p2p.Result, string)

// wire holds what the wire checks compare against: the network spec's IDs and limits.
type wire struct {
	network, run string
	maxPayload   int // largest shard payload, from the spec's compression section
}

func wireOf(s *configs.Spec) wire {
	return wire{network: s.NetworkID(), run: s.Run, maxPayload: s.Training.Compression.MaxShardBytes}
}

// checks returns the wire check of every topic kind.
func (w wire) checks() map[string]wireCheck {
	return map[string]wireCheck{
		p2p.KindShards:   w.shard,
		p2p.KindAttest:   w.bundle,
		p2p.KindRecords:  w.record,
		p2p.KindEvidence: w.evidence,
	}
}

// shardCap is the largest shard encoding the node takes, by gossip or fetch.
func (w wire) shardCap() int { return min(p2p.MaxMessageSize, w.maxPayload+shardEnvelope) }

func (w wire) shard(data []byte) (any, p2p.Result, string) {
	if len(data) > w.shardCap() {
		return nil, p2p.Reject, reasonSize
	}
	s, err := verify.UnmarshalShard(data, w.maxPayload)
	if err != nil {
		return nil, p2p.Reject, reasonDecode
	}
	return scoped(s)(w.scope(s.Header.Network, s.Header.Run))
}

func (w wire) bundle(data []byte) (any, p2p.Result, string) {
	if len(data) > verify.MaxBundleSize {
		return nil, p2p.Reject, reasonSize
	}
	b, err := verify.UnmarshalBundle(data)
	if err != nil {
		return nil, p2p.Reject, reasonDecode
	}
	return scoped(b)(w.scope(b.Network, b.Run))
}

func (w wire) evidence(data []byte) (any, p2p.Result, string) {
	if len(data) > min(p2p.MaxMessageSize, incentives.MaxEvidenceSize) {
		return nil, p2p.Reject, reasonSize
	}
	e, err := incentives.DecodeEvidence(data)
	if err != nil {
		return nil, p2p.Reject, reasonDecode
	}
	for _, h := range e.Headers {
		if r, reason := w.scope(h.Header.Network, h.Header.Run); r != p2p.Accept {
			return nil, r, reason
		}
	}
	return e, p2p.Accept, reasonOK
}

// scoped returns obj with a scope verdict, or nil when the verdict is not Accept.
func scoped(obj any) func(p2p.Result, string) (any, p2p.Result, string) {
	return func(r p2p.Result, reason string) (any, p2p.Result, string) {
		if r != p2p.Accept {
			return nil, r, reason
		}
		return obj, r, reason
	}
}

// scope accepts what was signed for this network and run.
func (w wire) scope(network, run string) (p2p.Result, string) {
	switch {
	case network != w.network:
		return p2p.Reject, reasonNetwork
	case run != w.run:
		return p2p.Reject, reasonRun
	}
	return p2p.Accept, reasonOK
}

// fullCheck is the check that follows a passed wire check and needs the node's state
// (round window, bundle verified, shard signature by the attested key, content; see
// fullChecks). obj is what the wire check decoded. A bootstrap node runs the wire checks
// alone. A fullCheck must not block: what it cannot decide yet it keeps (see Stash,
// charged to forwarder) and answers Ignore.
type fullCheck func(ctx context.Context, forwarder peer.ID, data []byte, obj any) (p2p.Result, string)

// validators builds the gossip validator of every topic kind: the wire check, then the
// full check of the kind if full has one, counting each result by kind and reason.
func validators(w wire, full map[string]fullCheck, met *gossipMetrics) map[string]p2p.Validator {
	out := make(map[string]p2p.Validator, len(p2p.Kinds))
	for kind, check := range w.checks() {
		next := full[kind]
		out[kind] = func(ctx context.Context, forwarder peer.ID, data []byte) p2p.Result {
			obj, r, reason := check(data)
			if r == p2p.Accept && next != nil {
				r, reason = next(ctx, forwarder, data, obj)
			}
			met.counted(kind, r, reason)
			return r
		}
	}
	return out
}

// Round window bounds.
const (
	// replayAfter: a shard more than this many rounds before the first open round is
	// counted as a replay, a later one as late. Both are Ignore, not Reject: the window is
	// this node's own view of the rounds, and an honest peer a few rounds behind may
	// forward such a shard in good faith, so it must not cost that peer its score.
	replayAfter = 2
	// keepRounds: the content store keeps the shards of this many rounds before the
	// first open round, for peers that fetch them.
	keepRounds = 4
)

// window decides a shard's round against the view, cheapest check of all.
func window(v core.View, round uint64) (p2p.Result, string) {
	switch {
	case v.NextClose > replayAfter && round < v.NextClose-replayAfter:
		return p2p.Ignore, reasonReplay
	case round < v.NextClose:
		return p2p.Ignore, reasonLate
	case round > v.NextLocal && round-v.NextLocal > v.Window:
		return p2p.Ignore, reasonFuture
	}
	return p2p.Accept, reasonOK
}

// fullConfig is what the full checks use. Stash and Content may be nil (new ones are
// made); the others must be set, except Fetch (no fetching), Log and Now. The full checks
// make the bundle registry (fullChecks.reg), so that the time spent verifying bundles is
// counted: the attestor and the fetch server use that one.
type fullConfig struct {
	Self peer.ID // this node: its own publishes are checked but not delivered
	Wire wire
	// Checker is the network's evidence checker (Params.Checker): its policy and time
	// base verify bundles, its ContentCheck checks shards, it re-checks evidence.
	Checker *incentives.Checker
	// EvidenceWindow is the ledger's evidence window in rounds (Params.Ledger).
	EvidenceWindow uint64
	// Due checks a shard's tensors against its round's schedule (newDueCheck; nil: not
	// checked).
	Due *dueCheck
	// Ledger returns the ledger in force; records of signers without stake in it are
	// ignored (nil: none are).
	Ledger  func() *incentives.State
	Stash   *Stash
	Content *contentStore
	Fetch   *fetchClient
	// Peers returns the peers to ask for a record a forwarder failed to send (the records
	// topic's; nil: none but the forwarders).
	Peers func() []peer.ID
	// Deliver sends an event (shardIn, evidenceIn, recordIn) to the loop's inbox without blocking,
	// and reports false when the inbox is full.
	Deliver func(ev any) bool
	// Publish publishes on a gossip topic: evidence the node makes.
	Publish publishFunc
	Metrics *gossipMetrics
	Log     *slog.Logger
	Now     func() time.Time
	// MaxHeavy bounds the bundle verifications and evidence checks run at once for
	// gossip; over it a message is ignored (busy). 0 = GOMAXPROCS.
	MaxHeavy int
	// MaxAsync bounds the bundle fetches and evidence publications in flight, and apart
	// the fetches of missing shards; over it they are dropped. 0 = 8.
	MaxAsync int
}

// fullChecks are a node's gossip checks after the wire checks: round window from the
// loop's view, bundle known (else stashed and fetched) and verified, shard signed by the
// attested key of the peer it names, content; evidence re-checked. Provable failures
// become evidence, delivered to the loop and published. Validators never block: a full
// inbox or no free verification slot is Ignore (busy). Safe for concurrent use.
type fullChecks struct {
	cfg      fullConfig
	reg      *registry
	stash    *Stash
	content  *contentStore
	records  *recordBook
	repairs  jobQueue // shards repairs want
	gaps     jobQueue // records missing from a signer's rounds
	bodies   jobQueue // records that vote references name (vote_refs.go)
	spent    *cpuMeter
	evidence *incentives.CheckCache
	view     atomic.Pointer[core.View]
	heavy    chan struct{}
	async    chan struct{}
	wants    chan struct{}

	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	life    sync.Mutex // guards stopped and wg.Add against close
	stopped bool

	mu       sync.Mutex
	pending  map[[32]byte]bool           // bundles being fetched
	fetching map[peer.ID]int             // bundle fetches in flight by neighbour
	made     map[incentives.Offence]bool // offences this node made evidence of
	refWait  map[[32]byte]*refWaiter     // vote references waiting for their record, by digest
}

// maxMade bounds the offences remembered; past it they are forgotten at once.
const maxMade = 4096

// newFullChecks returns the full checks, starting at the zero view. The loop wires them
// in: validators(wire, f.checks(), met) as the host's validators (SetValidator), the fetch
// server newFetchServer(f.reg, f.content, f.records) on p2p.FetchProtocol, newAttestor with f.reg;
// then f.setView after each event, f.wantShard for the slots the core wants,
// f.verifySeconds for the status, and close at the end, which stops the fetches and
// publications in flight.
func newFullChecks(cfg fullConfig) *fullChecks {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxHeavy <= 0 {
		cfg.MaxHeavy = runtime.GOMAXPROCS(0)
	}
	if cfg.MaxAsync <= 0 {
		cfg.MaxAsync = 8
	}
	f := &fullChecks{cfg: cfg, stash: cfg.Stash, content: cfg.Content, records: newRecordBook(0), spent: &cpuMeter{},
		heavy: make(chan struct{}, cfg.MaxHeavy), async: make(chan struct{}, cfg.MaxAsync), wants: make(chan struct{}, cfg.MaxAsync),
		pending: make(map[[32]byte]bool), fetching: make(map[peer.ID]int), made: make(map[incentives.Offence]bool),
		refWait: make(map[[32]byte]*refWaiter)}
	f.reg = newRegistry(cfg.Checker, cfg.Log, f.spent)
	if f.stash == nil {
		f.stash = NewStash(StashConfig{})
	}
	if f.content == nil {
		f.content = newContentStore(0)
	}
	f.evidence = incentives.NewCheckCache(cfg.Checker, maxMade)
	f.ctx, f.cancel = context.WithCancel(context.Background())
	f.view.Store(&core.View{})
	return f
}

// checks returns the full check of each topic kind that has one.
func (f *fullChecks) checks() map[string]fullCheck {
	return map[string]fullCheck{p2p.KindShards: f.shard, p2p.KindAttest: f.bundle, p2p.KindEvidence: f.evidenceCheck,
		p2p.KindRecords: f.recordCheck}
}

// setView publishes the loop's view and drops what it makes useless: stashed shards of
// closed rounds; records and content of rounds older than keptFrom (peers repairing a
// round may fetch them).
func (f *fullChecks) setView(v core.View) {
	f.view.Store(&v)
	f.stash.Expire(v.NextClose)
	from := keptFrom(v)
	f.records.prune(from)
	f.pruneWaits(from)
	f.content.prune(from)
	f.offerAside(v)
}

// keptFrom is the oldest round whose shards and records a node keeps to serve: twice its
// repair depth behind its first open round, so that a peer as far behind as that depth
// can still repair its own window from them, and at least keepRounds.
func keptFrom(v core.View) uint64 {
	depth := v.NextClose - min(v.RepairFrom, v.NextClose)
	from := v.RepairFrom - min(v.RepairFrom, depth)
	if v.NextClose > keepRounds {
		from = min(from, v.NextClose-keepRounds)
	}
	return from
}

// verifySeconds is the time spent verifying bundles, signatures, content and evidence.
func (f *fullChecks) verifySeconds() float64 { return f.spent.seconds() }

// close stops the fetches and publications in flight and waits for them.
func (f *fullChecks) close() {
	f.life.Lock()
	f.stopped = true
	f.life.Unlock()
	f.cancel()
	f.wg.Wait()
}

func (f *fullChecks) shard(_ context.Context, fwd peer.ID, data []byte, obj any) (p2p.Result, string) {
	s := obj.(*verify.Shard)
	if r, reason := window(*f.view.Load(), s.Header.Round); r != p2p.Accept {
		if reason == reasonLate {
			return f.lateConflict(s, data)
		}
		return r, reason
	}
	h := [32]byte(s.Header.BundleHash)
	hb, ok := f.reg.get(h)
	if !ok {
		f.stash.Put(fwd.String(), string(h[:]), s.Header.Round, data)
		f.wantBundle(h, fwd)
		return p2p.Ignore, reasonBundleUnknown
	}
	return f.signed(s, data, hb, fwd == f.cfg.Self)
}

// signed runs the checks of a shard whose bundle is held, cheapest first: bundle verified
// for the shard's round, peer, signature, content; then hands it to the loop.
func (f *fullChecks) signed(s *verify.Shard, data []byte, hb *heldBundle, local bool) (p2p.Result, string) {
	key, r, reason := f.attestedKey(s, hb)
	if r != p2p.Accept {
		return r, reason
	}
	if err := f.checkSignature(s, key); err != nil {
		return p2p.Reject, reasonSignature
	}
	return f.checked(s, data, hb, local)
}

// attestedKey is the key that may sign s: that of its bundle hb, verified for the epoch
// of s's round, when s names hb's peer. A shard under a bundle that fails may be evidence.
func (f *fullChecks) attestedKey(s *verify.Shard, hb *heldBundle) (ed25519.PublicKey, p2p.Result, string) {
	v, err := f.reg.verdict(hb, attest.EpochOf(s.Header.Round, f.cfg.Checker.EpochRounds))
	if err != nil {
		f.invalidAttestation(hb, s, err)
		return nil, p2p.Reject, reasonBundleInvalid
	}
	if s.Header.Peer != v.PeerID {
		return nil, p2p.Reject, reasonPeerMismatch
	}
	return v.EphemeralKey, p2p.Accept, reasonOK
}

// checked runs the content checks of a shard whose signature verified (failing: evidence)
// and hands it to the loop, once: not the node's own, not one the loop has had. Of the
// shards for one slot, the first and the first other (which proves equivocation) pass;
// later ones are ignored, neither forwarded nor queued for the loop.
func (f *fullChecks) checked(s *verify.Shard, data []byte, hb *heldBundle, local bool) (p2p.Result, string) {
	if err := f.checkContent(s.Payload); err != nil {
		f.report(incentives.NewInvalidContent(hb.data, s))
		return p2p.Reject, reasonContent
	}
	if err := f.checkDue(s); err != nil {
		return p2p.Reject, reasonDue
	}
	switch f.content.put(s, data) {
	case putRepeated:
		return p2p.Ignore, reasonEquivocation
	case putResigned:
		return p2p.Ignore, reasonResigned
	case putSame:
		return p2p.Accept, reasonOK
	case putConflict:
		f.equivocation(s, hb)
	}
	if local {
		return p2p.Accept, reasonOK
	}
	if !f.cfg.Deliver(shardIn{shard: s, bundle: hb.data, at: f.cfg.Now()}) {
		f.content.remove(s, data)
		return p2p.Ignore, reasonBusy
	}
	return p2p.Accept, reasonOK
}

// lateConflict checks a shard of a round this node closed (which gossip ignores as late)
// when the store holds another shard for its slot whose conflict is not known yet, and
// reports the equivocation if its bundle and signature hold. The second shard of a slot
// may reach a node after it closed the round with the first (the two travel apart); were
// that so on every node, nobody would prove the offence. The shard is Ignore (late)
// whatever it proves, and Reject when it fails a check it was put through, as a shard of
// an open round would be: a forwarder of junk for held slots pays for the checks.
func (f *fullChecks) lateConflict(s *verify.Shard, data []byte) (p2p.Result, string) {
	if !f.content.differs(s) {
		return p2p.Ignore, reasonLate
	}
	hb, ok := f.reg.get([32]byte(s.Header.BundleHash))
	if !ok {
		return p2p.Ignore, reasonLate
	}
	key, r, reason := f.attestedKey(s, hb)
	if r != p2p.Accept {
		return r, reason
	}
	if err := f.checkSignature(s, key); err != nil {
		return p2p.Reject, reasonSignature
	}
	if f.content.put(s, data) == putConflict {
		f.equivocation(s, hb)
	}
	return p2p.Ignore, reasonLate
}

// equivocation reports the evidence of shard s, verified, whose slot holds a shard under
// another header, whatever the state of its round: the core makes that evidence too when
// it holds both in an open round (the two are the same bytes, and report makes it once),
// but a round may close between this check and the loop's turn, and the core has let go
// of a closed round's shards.
func (f *fullChecks) equivocation(s *verify.Shard, hb *heldBundle) {
	data := f.content.shard(slotOf(&s.Header))
	if data == nil {
		return
	}
	old, err := verify.UnmarshalShard(data, len(data))
	if err != nil {
		return
	}
	ob, ok := f.reg.get([32]byte(old.Header.BundleHash))
	if !ok {
		return
	}
	f.report(incentives.NewEquivocationOf(ob.data, incentives.SignedHeader{Header: old.Header, Sig: old.Sig},
		hb.data, incentives.SignedHeader{Header: s.Header, Sig: s.Sig}))
}

func (f *fullChecks) checkSignature(s *verify.Shard, key ed25519.PublicKey) error {
	defer f.spent.stop(f.spent.start())
	return verify.CheckShardSignature(s, key)
}

// checkSignatures checks shards' signatures in one batch (verify.CheckShardSignatures).
func (f *fullChecks) checkSignatures(shards []*verify.Shard, keys []ed25519.PublicKey) []error {
	defer f.spent.stop(f.spent.start())
	return verify.CheckShardSignatures(shards, keys)
}

// checkDue runs the schedule check of a shard whose content passed.
func (f *fullChecks) checkDue(s *verify.Shard) error {
	if f.cfg.Due == nil {
		return nil
	}
	defer f.spent.stop(f.spent.start())
	return f.cfg.Due.check(s.Header.Round, s.Header.Count, s.Payload)
}

func (f *fullChecks) checkContent(payload []byte) error {
	defer f.spent.stop(f.spent.start())
	return f.cfg.Checker.ContentCheck(payload)
}

// invalidAttestation reports a shard signed under a bundle that fails: evidence when the
// failure is of a provable class and the shard is the bundle's peer's, signed by its key
// (the checker decides the rest).
func (f *fullChecks) invalidAttestation(hb *heldBundle, s *verify.Shard, err error) {
	if !slices.Contains(incentives.ProvableClasses, verify.ClassOf(err)) || s.Header.Peer != hb.b.PeerID ||
		f.checkSignature(s, hb.b.EphemeralKey) != nil {
		return
	}
	f.report(incentives.NewInvalidAttestation(hb.data, incentives.SignedHeader{Header: s.Header, Sig: s.Sig}))
}
