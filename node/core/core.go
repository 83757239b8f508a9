package core

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/training"
	"github.com/lowband/lowband/training/compress"
	"github.com/lowband/lowband/training/round"
	"github.com/lowband/lowband/verify"
)

// Message kinds: the gossip topics a Ready's messages go to (the values of p2p.Kind*).
const (
	KindShards   = "shards"
	KindRecords  = "records"
	KindEvidence = "evidence"
)

// Defaults of Config's bounds on the evidence waiting for a record.
const (
	DefaultMaxPendingEvidence      = 1024
	DefaultMaxPendingEvidenceBytes = 64 << 20
)

// ErrNoSigner is returned by LocalDone when no Signer was set: the node cannot sign its
// contribution, so it does not make one.
var ErrNoSigner = errors.New("core: no signer for the node's contribution")

// ErrShard is returned (wrapped) by Shard for a shard that no validator passes: nil, of
// another network or run, or with a peer ID or index out of form.
var ErrShard = errors.New("core: shard out of form")

// Config sets up a Core. Every field but Self and Round.Self comes from the network's params.
type Config struct {
	Self         string       // this node's canonical peer ID
	Network, Run string       // for the shard headers it signs
	Round        round.Config // Params.RoundConfig(self, 1); per-round weights come from the ledger
	Deadline     DeadlineConfig
	Checker      incentives.EvidenceChecker // Params.Checker
	Limits       compress.Limits            // Params.Limits, to decode shard payloads
	// MaxPendingEvidence and MaxPendingEvidenceBytes bound the evidence waiting for a
	// record, in items and in encoded bytes (0: the defaults); past them the oldest item
	// against the peer with the most bytes pending is dropped.
	MaxPendingEvidence      int
	MaxPendingEvidenceBytes int
	// Identity is the node's libp2p identity: it signs the node's records, which the
	// records topic carries as incentives.SignedRecord. Without it (nodes that do not take
	// part in agreement yet) records are published as bare incentives.Record bytes.
	Identity crypto.PrivKey
	// Depth is how many closed rounds stay open to repair (the spec's
	// agreement.repair_depth; 0: DefaultDepth).
	Depth uint64
}

// Signer is the node's ephemeral key for the current epoch and its attestation bundle.
type Signer struct {
	Key        ed25519.PrivateKey
	Bundle     []byte   // verify.Bundle, marshalled (Marshal()), for evidence about this node
	BundleHash [32]byte // verify.Bundle.Hash()
}

// View is what validators need, published by the loop after each event.
type View struct {
	NextClose uint64 // first open round: shards for earlier rounds are late or replays
	NextLocal uint64 // round of local work in progress
	Window    uint64 // shards may be for rounds up to NextLocal+Window
	Epoch     uint64 // attestation epoch of NextLocal
	// RepairFrom is the oldest round open to repair: shards of closed rounds from it on
	// are taken when a repair wants their CID (the fetch path lets them through; gossip
	// still finds them late).
	RepairFrom uint64
	// RecordsUpTo is the last round whose records the core keeps (from RepairFrom on).
	RecordsUpTo uint64
	// Voters are the signers whose records the core keeps (those that may weigh in a round
	// of the window; see ErrRecordNoPower). Read only: it is shared, never modified.
	Voters map[string]bool
}

// Ready is what the caller does after an event, in this order: Repair and Commit (persist
// first, Repair before Commit), then Publish, Fetch, Train, Summary. Nil or empty means
// nothing to do. The caller owns it.
type Ready struct {
	Repair  *Repair // closed rounds replaced by their canonical lists' states
	Commit  *Commit
	Publish []Message // own signed shards, evidence, the commit record
	Fetch   []Want    // slots missing when a round is about to close
	Train   *round.Start
	Summary *Summary // one per closed round
	// Late are rounds whose local work this node dropped, before it began or when it
	// ended, because its peers had closed them already (late.go).
	Late []uint64
	// Shift, from a round closed during the next round's local work (the recipe's merge,
	// round.Config.Merge), is the move of that work's base: the caller adds it to the
	// work's parameters at once, or to what the work reports when it has ended.
	Shift *Shift
}

// Shift is the move of round Round's local work that a merging close made.
type Shift struct {
	Round  uint64
	Params []training.Tensor
}

// Message is one gossip message to publish: Kind names the topic (KindShards...).
type Message struct {
	Kind string
	Data []byte
}

// Want names a shard slot to fetch, or with CID set a shard by its payload CID (for a
// repair of a closed round; Peer is the one to ask first, Index is not used).
type Want struct {
	Round uint64
	Peer  string
	Index uint32
	CID   []byte
	// Count, with CID, is how many shards the entry lists: the shard's header must count
	// as many (a signer may sign one payload under other counts and indexes).
	Count uint32
	// Taken, with CID, are the indexes that the entry's other shards, already fetched and
	// each under the index its payload was cut for, hold: a shard of CID under one of them
	// does not join with them (its signer signed two of the entry's payloads for one slot).
	Taken []uint32
}

// Commit is what a closed round changes in the store, in one transaction.
type Commit struct {
	Record *incentives.Record
	State  *incentives.State
	Events []incentives.Event
	// Signed is the record as this node signed and published it (incentives.SignedRecord
	// bytes), kept with the commit so an offline audit can check the signature; nil without
	// Config.Identity and for rounds closed again by a repair (their records are not signed).
	Signed []byte
	// Vote is the signed record this node published for the round, its vote: Signed, or
	// when the round was settled at once with another list, the record it closed with
	// first. A restart resends these bytes (Snapshot.Vote), never a record signed again.
	// Nil without Config.Identity and for rounds closed again by a repair.
	Vote []byte
}

// Summary describes a closed round.
type Summary struct {
	Round uint64
	// Included lists the peers aggregated (sorted), this node included if it was.
	Included []string
	// Filtered lists the peers of Included the aggregation rule left out whole (sorted):
	// listed in the record, aggregated with no weight, rewarded with nothing.
	Filtered []string
	// Rejected counts the contributions left out at close by reason: "incomplete",
	// "jailed", "weight", "decode", "cap", "equivocation", and "filtered" for those of
	// Included the aggregation rule left out whole (they earn nothing).
	Rejected          map[string]int
	Evidence          int           // evidence items in the record
	ContributionBytes int           // this node's own signed shard bytes for Round
	Stall             time.Duration // local work blocked waiting for this round to close
	// Held is how long the round waited, once its deadline rule let it close, for the
	// records of the round leaving the repair window (aheadOfRecords).
	Held       time.Duration
	Deadline   time.Duration // the adaptive deadline in force
	ModelRoot  [32]byte      // round.State root after the close
	StateRoot  [32]byte      // Record.NewRoot
	LedgerRoot [32]byte      // State.Root()
	Ranks      []int         // codec ranks of the node's last encoding
	Params     []training.Tensor
}

// Core is the node's round decisions: it owns the round machine, the ledger state, the
// deadline and the pending evidence. Events come in with their time; what to persist,
// publish, fetch and train comes out in a Ready. It does no I/O, reads no clock and is not
// safe for concurrent use: one goroutine (the round loop) owns it.
type Core struct {
	cfg      Config
	m        *round.Machine
	ledger   *incentives.State
	deadline *Deadline
	signer   *Signer

	nextClose, nextLocal uint64
	// lastIn is when the last of the contributions this Core included in round
	// nextClose-1 arrived; zero before it closed one (clockOf).
	lastIn       time.Time
	realign      bool   // its contribution to the round it closed last came after its peers closed it (late.go)
	maxShards    uint32 // bound on a contribution's shard count (maxShardsFor)
	rounds       map[uint64]*roundIn
	own          map[uint64]*ownRound // own contributions of open rounds
	pending      []incentives.Evidence
	pendingMeta  []pendingMeta // of each pending item, in the same order
	pendingIDs   map[incentives.ID]struct{}
	pendingBytes int
	blocked      time.Time // when local work began waiting for a close (zero: not waiting)
	total        powerSum  // the ledger's total voting power
	agree        *agreement
}

// ownRound is this node's contribution to an open round.
type ownRound struct {
	done  time.Time // LocalDone
	cids  [][]byte
	bytes int
	msg   *compress.Message
}

// New returns a Core that resumes from st with the ledger state ledger, whose Round must
// equal st.Round.
func New(cfg Config, st round.State, ledger *incentives.State) (*Core, error) {
	if cfg.Self == "" || cfg.Round.Self != cfg.Self {
		return nil, fmt.Errorf("core: self %q and round config self %q", cfg.Self, cfg.Round.Self)
	}
	if err := verify.CheckPeerID(cfg.Self); err != nil {
		return nil, fmt.Errorf("core: self: %w", err)
	}
	if cfg.Network == "" || cfg.Run == "" || len(cfg.Network) > verify.MaxIDLen || len(cfg.Run) > verify.MaxIDLen {
		return nil, fmt.Errorf("core: network %q, run %q: need 1-%d bytes each", cfg.Network, cfg.Run, verify.MaxIDLen)
	}
	if cfg.Checker == nil || ledger == nil {
		return nil, fmt.Errorf("core: config needs a checker and a ledger")
	}
	if ledger.Round != st.Round {
		return nil, fmt.Errorf("core: ledger at round %d, model at round %d", ledger.Round, st.Round)
	}
	if cfg.MaxPendingEvidence <= 0 {
		cfg.MaxPendingEvidence = DefaultMaxPendingEvidence
	}
	if cfg.MaxPendingEvidenceBytes <= 0 {
		cfg.MaxPendingEvidenceBytes = DefaultMaxPendingEvidenceBytes
	}
	if cfg.Round.Window == 0 {
		cfg.Round.Window = 1
	}
	if cfg.Depth == 0 {
		cfg.Depth = DefaultDepth
	}
	if err := checkIdentity(cfg.Identity, cfg.Self); err != nil {
		return nil, err
	}
	d, err := NewDeadline(cfg.Deadline)
	if err != nil {
		return nil, err
	}
	m, err := round.New(cfg.Round, st)
	if err != nil {
		return nil, fmt.Errorf("core: %w", err)
	}
	n := 0
	for _, t := range st.Params {
		n += len(t.Data)
	}
	return &Core{
		cfg: cfg, m: m, ledger: ledger, deadline: d, maxShards: maxShardsFor(n, len(st.Params)),
		nextClose: st.Round, nextLocal: st.Round,
		rounds: map[uint64]*roundIn{}, own: map[uint64]*ownRound{},
		pendingIDs: map[incentives.ID]struct{}{}, agree: newAgreement(),
	}, nil
}

// SetSigner sets the key and bundle the node's next contributions are signed with: at start
// and at each new epoch.
func (c *Core) SetSigner(s Signer) { c.signer = &s }

// Start starts the first local work (Ready.Train); after Resume to a round that cannot
// start yet, nothing (the start comes out of a close).
func (c *Core) Start(now time.Time) (Ready, error) {
	if !c.m.Startable() && c.nextLocal > c.nextClose+uint64(c.cfg.Round.Delay) {
		return Ready{}, nil
	}
	s, err := c.m.Start()
	if err != nil {
		return Ready{}, fmt.Errorf("core: %w", err)
	}
	var rd Ready
	if err := c.startChecked(&s, &rd); err != nil {
		return Ready{}, err
	}
	return rd, nil
}

// LocalDone reports that local work for round r ended with the parameters local: the
// contribution is compressed, each shard signed with the Signer and published. It fails
// without a Signer (ErrNoSigner) or for the wrong round (round.ErrOrder), before anything
// changes; any other error (a contribution of more shards than a record lists: the
// network's shard byte cap is too small for its model) leaves the Core unusable. The round
// before may close at once.
func (c *Core) LocalDone(now time.Time, r uint64, local []training.Tensor) (Ready, error) {
	if c.signer == nil || len(c.signer.Key) != ed25519.PrivateKeySize {
		return Ready{}, ErrNoSigner
	}
	if _, dup := c.own[r]; dup || r != c.nextLocal {
		return Ready{}, fmt.Errorf("%w: local work done for round %d, expected %d", round.ErrOrder, r, c.nextLocal)
	}
	if c.peersClosed(r) { // too late to count: dropped, unsigned (late.go)
		var rd Ready
		if err := c.skipLate(r, &rd); err != nil {
			return Ready{}, err
		}
		if err := c.startNext(&rd); err != nil {
			return Ready{}, err
		}
		if rd.Train == nil {
			c.blocked = now
		}
		return c.tryClose(now, rd)
	}
	mr, err := c.m.LocalDone(r, local)
	if err != nil {
		return Ready{}, fmt.Errorf("core: %w", err)
	}
	c.nextLocal = r + 1
	var rd Ready
	if err := c.startChecked(mr.Start, &rd); err != nil {
		return Ready{}, err
	}
	if err := c.signOwn(now, mr.Send, &rd); err != nil {
		return Ready{}, err
	}
	if rd.Train == nil {
		c.blocked = now
	}
	if next, ok := c.m.Closable(); ok && next == r {
		// The round that may close now is r itself (outer.merge: during the next work, or
		// after a late round skipped to realign): not in the Ready that publishes this
		// node's contribution to it, whose commit, persisted before the publish, would not
		// find the node's own shards to store. The next event (a tick at the latest) closes
		// it.
		return rd, nil
	}
	return c.tryClose(now, rd)
}

// signOwn signs and publishes the shards of this node's contribution.
func (c *Core) signOwn(now time.Time, out *round.Outbound, rd *Ready) error {
	if len(out.Shards) > incentives.MaxShardsPerContribution {
		return fmt.Errorf("core: round %d: %d shards, a record lists at most %d (raise the shard byte cap)", out.Round, len(out.Shards), incentives.MaxShardsPerContribution)
	}
	o := &ownRound{done: now, msg: out.Msg}
	for _, sh := range out.Shards {
		h := verify.ShardHeader{
			Network: c.cfg.Network, Run: c.cfg.Run, Round: out.Round, Peer: c.cfg.Self,
			Index: uint32(sh.Index), Count: uint32(sh.Count), BundleHash: c.signer.BundleHash[:],
		}
		s, err := verify.SignShard(c.signer.Key, h, sh.Data)
		if err != nil {
			return fmt.Errorf("core: signing shard %d of round %d: %w", sh.Index, out.Round, err)
		}
		data, err := s.Marshal()
		if err != nil {
			return fmt.Errorf("core: encoding shard %d of round %d: %w", sh.Index, out.Round, err)
		}
		o.cids = append(o.cids, s.Header.PayloadCID)
		o.bytes += len(data)
		rd.Publish = append(rd.Publish, Message{Kind: KindShards, Data: data})
	}
	c.own[out.Round] = o
	return nil
}

// Tick closes the next round when the deadline allows it.
func (c *Core) Tick(now time.Time) (Ready, error) { return c.tryClose(now, Ready{}) }

// Finish tells the Core no more local work will be done: the remaining rounds close on
// Tick without waiting for it.
func (c *Core) Finish() {
	c.m.Finish()
	c.blocked = time.Time{}
}

// View returns what validators need to place a shard's round.
func (c *Core) View() View {
	return View{NextClose: c.nextClose, NextLocal: c.nextLocal, Window: c.cfg.Round.Window, Epoch: c.epoch(c.nextLocal),
		RepairFrom: c.repairFrom(), RecordsUpTo: c.recordsUpTo(), Voters: c.voters()}
}

// epoch is the attestation epoch of round r, by the checker's epoch length.
func (c *Core) epoch(r uint64) uint64 {
	var n uint64
	switch ch := c.cfg.Checker.(type) {
	case *incentives.Checker:
		n = ch.EpochRounds
	case *incentives.CheckCache:
		if in, ok := ch.Inner.(*incentives.Checker); ok {
			n = in.EpochRounds
		}
	}
	if n == 0 {
		return 0
	}
	return r / n
}

// Ledger returns the ledger state in force (the caller must not modify it).
func (c *Core) Ledger() *incentives.State { return c.ledger }

// State returns a copy of the global state in force: the first open round, θ and the
// outer momentum (repairs included).
func (c *Core) State() round.State { return c.m.State() }

// ModelRoot is the root of the round state: the rounds closed so far, θ and momentum.
func (c *Core) ModelRoot() [32]byte { return c.m.Root() }

// checkIdentity: an identity, when given, must be the one self names.
func checkIdentity(key crypto.PrivKey, self string) error {
	if key == nil {
		return nil
	}
	id, err := peer.IDFromPrivateKey(key)
	if err != nil {
		return fmt.Errorf("core: identity: %w", err)
	}
	if id.String() != self {
		return fmt.Errorf("core: identity is %s's, self is %s", id, self)
	}
	return nil
}
