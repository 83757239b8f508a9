package core

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/training/compress"
	"github.com/lowband/lowband/training/round"
)

// DefaultDepth is how many closed rounds stay open to repair when Config.Depth is 0.
const DefaultDepth = 3

// Record's refusals. Each means the record changed nothing; they give the caller a reason
// to log and count.
var (
	// ErrRecord: a signed record of another network or run, or with no inner record: no
	// validator passes those.
	ErrRecord = errors.New("core: record out of form")
	// ErrRecordWindow: a record of a round before View.RepairFrom or past the round after
	// the next to close.
	ErrRecordWindow = errors.New("core: record outside the repair window")
	// ErrRecordNoPower: a record of a signer with voting power in no ledger of the window:
	// the ledgers at the start of the rounds open to repair, the one in force and the next
	// (Core.voters). Within it, a record weighs its signer's power in the ledger at the
	// start of its round, which may be none.
	ErrRecordNoPower = errors.New("core: record of a signer without voting power")
	// ErrRecordDuplicate: a further record of a signer whose two different records for
	// the round dropped its vote on it (a second one is not refused: it drops the vote).
	ErrRecordDuplicate = errors.New("core: second record of a signer for a round")
)

// Repair replaces closed rounds by what their canonical inclusion lists give. The caller
// persists it before anything else in the Ready (the Commit, if any, follows it).
type Repair struct {
	From    uint64    // first round replaced; Commits[0].Record.Round == From
	Commits []*Commit // the rounds From.. closed again, in order; the last is the new head
	// OldRoot and NewRoot are the state roots of the head before and after.
	OldRoot, NewRoot [32]byte
}

// Agreement is where this node stands in the agreement on each round's inclusion list.
type Agreement struct {
	Head uint64   // last closed round
	Root [32]byte // this node's state root of Head
	// Canonical is the state root of CanonicalRound, the last closed round whose canonical
	// list rests on records carrying more than half of the voting power and whose state
	// this node holds (zero: none yet).
	Canonical      [32]byte
	CanonicalRound uint64
	// Agrees: no repair is pending or was given up, so this node holds the canonical state
	// of every round the records it has seen decide.
	Agrees bool
	// Stale: a repair waited until its round left the window; only a checkpoint (a later
	// step) brings this node back to the canonical state.
	Stale   bool
	Repairs int // rounds closed again so far
	Waiting int // CIDs a pending repair still waits for
	// Duplicates counts records of a signer for a round whose vote was dropped already
	// (ignored).
	Duplicates int
	// Equivocations counts signers that signed two different records for one round: their
	// votes on it were dropped and the two records made evidence.
	Equivocations int
}

// agreement is what the Core keeps to agree with its peers on closed rounds.
type agreement struct {
	closed        map[uint64]*closedRound                        // rounds inside the repair window
	votes         map[uint64]map[string]*incentives.Record       // round -> signer -> its first record
	signed        map[uint64]map[string]*incentives.SignedRecord // the signed form of votes (peers')
	twice         map[uint64]map[string]bool                     // round -> signers of two records: no vote
	voters        voterSet                                       // signers whose records are kept
	tallies       map[uint64]*tally                              // of votes, by round
	wait          *waiting                                       // a repair waiting for shards
	repairs       int
	duplicates    int
	equivocations int
	resent        uint64 // own records were resent for rounds below this
	stale         bool   // a repair left the window unfinished
	// gen counts the changes to votes and twice: pendingVotes' answer is kept until the
	// next (pending).
	gen     uint64
	pending pendingMemo
}

// pendingMemo is pendingVotes' last answer: for round u by ledger led at generation gen.
type pendingMemo struct {
	u, gen, power uint64
	led           *incentives.State
}

// closedRound is one closed round inside the repair window: what closing it again needs.
type closedRound struct {
	pre     round.State       // the model state before the close (pre.Round is the round)
	ledger  *incentives.State // the ledger in force at its start
	held    map[string]*heldContribution
	record  *incentives.Record      // this node's committed record (after repairs)
	own     *incentives.Record      // the record this node published: its vote
	vote    Message                 // and the message that carried it
	basis   [32]byte                // fingerprint of the list the state was last closed from
	fetched map[string]fetchedShard // of entries a repair waits for, by shardKey
}

// heldContribution is a contribution this node holds for a closed round, with the CIDs of
// its shards (sorted). msg is nil when its shards do not decode.
type heldContribution struct {
	peer string
	cids [][]byte
	msg  *compress.Message
}

func newAgreement() *agreement {
	return &agreement{closed: map[uint64]*closedRound{}, votes: map[uint64]map[string]*incentives.Record{},
		signed: map[uint64]map[string]*incentives.SignedRecord{}, twice: map[uint64]map[string]bool{}, tallies: map[uint64]*tally{}}
}

// MaxRepairLag bounds how many closed rounds a waiting repair keeps open: the store
// keeps the ledger states of that many rounds to close them again (store.KeptStates).
const MaxRepairLag = 16

// RepairLag is how many closed rounds a waiting repair of a node whose repair depth is
// depth keeps open: twice the depth, at most MaxRepairLag, and never fewer than the depth.
func RepairLag(depth uint64) uint64 { return max(depth, min(2*depth, MaxRepairLag)) }

// repairFrom is the oldest round open to repair: rounds closed at most Depth ago, and
// while a repair waits for shards, the rounds from the one it starts at, at most
// 2·Depth ago (peers keep the shards of that many rounds to serve: node.keptFrom) and
// MaxRepairLag. Rounds close at their own pace whatever a repair waits for; were its
// round to leave the window with the Depth rounds after it, a fetch slower than those
// closes would leave this node on its own chain for good (Agreement.Stale).
// recordsUpTo is the last round whose records the Core keeps: the round after the next
// to close and Depth more, so that a node a few rounds behind its peers (slower, or
// restarted) holds their records of the rounds it is yet to close when it gets there: the
// list vote, its close's wait for the records of its window (aheadOfRecords) and the
// drop of late local work (late.go) need them, and gossip carries each only once.
func (c *Core) recordsUpTo() uint64 { return c.nextClose + 1 + c.cfg.Depth }

func (c *Core) repairFrom() uint64 { return c.repairFromAt(c.nextClose) }

// repairFromAt is repairFrom once next is the next round to close.
func (c *Core) repairFromAt(next uint64) uint64 {
	from := next - min(next, c.cfg.Depth)
	if w := c.agree.wait; w != nil && w.from < from {
		from = max(w.from, next-min(next, RepairLag(c.cfg.Depth)))
	}
	return from
}

// releaseLeaving lets go of the model states kept to close again the rounds that leave
// the window once next is the next round to close (keepClosed forgets those rounds after
// the close). The close calls it first, so that the θ and momentum it makes never sit
// beside the oldest kept ones: a node holds one model state fewer at its peak.
func (c *Core) releaseLeaving(next uint64) {
	from := c.repairFromAt(next)
	for u, cr := range c.agree.closed {
		if u < from {
			cr.pre = round.State{}
		}
	}
}

// entryKey is an inclusion entry's exact encoding: the peer, then each shard CID, every
// part prefixed with its length. Two entries are the same vote when their keys are equal.
func entryKey(peer string, cids [][]byte) string {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(peer)))
	b = append(b, peer...)
	for _, c := range cids {
		b = binary.BigEndian.AppendUint32(b, uint32(len(c)))
		b = append(b, c...)
	}
	return string(b)
}

// fingerprint identifies an inclusion list: its entries' keys and its evidence IDs, in
// order.
func fingerprint(list []incentives.Contribution, evidence []incentives.Evidence) [32]byte {
	h := sha256.New()
	for _, e := range list {
		k := entryKey(e.Peer, e.Shards)
		h.Write(binary.BigEndian.AppendUint32(nil, uint32(len(k))))
		h.Write([]byte(k))
	}
	h.Write([]byte{0xff, 0xff, 0xff, 0xff}) // no entry key is this long
	for _, e := range evidence {
		id := e.ID()
		h.Write(id[:])
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// Record takes a signed record whose form and signature the validator checked. It keeps
// the first record of each signer that may weigh (Core.voters) for each round from
// RepairFrom to the round after the next to close (one not closed yet is held until it
// closes, and weighed then by the ledger at its start), and when the record is for a
// closed round, decides that round's list again: a Ready.Repair when the canonical lists
// now give other states and this node holds what they need, a Ready.Fetch (by CID) when
// it does not. A second, different record of a signer for a round drops the signer's vote
// on it and publishes the two as evidence (equivocated), then decides again. Records
// outside those rounds (ErrRecordWindow), of signers that may not weigh
// (ErrRecordNoPower) and later ones of a signer whose vote was dropped
// (ErrRecordDuplicate) change nothing; this node's own and a record it holds already are
// ignored. Any other error is a repair that failed.
func (c *Core) Record(now time.Time, sr *incentives.SignedRecord, rec *incentives.Record) (Ready, error) {
	if sr == nil || rec == nil {
		return Ready{}, fmt.Errorf("%w: nil", ErrRecord)
	}
	if sr.Network != c.cfg.Network || sr.Run != c.cfg.Run {
		return Ready{}, fmt.Errorf("%w: network %q run %q", ErrRecord, sr.Network, sr.Run)
	}
	r := rec.Round
	if sr.Signer == c.cfg.Self { // this node's own, back from gossip
		return Ready{}, nil
	}
	if r < c.repairFrom() || r > c.recordsUpTo() {
		return Ready{}, fmt.Errorf("%w: round %d, open to repair %d-%d", ErrRecordWindow, r, c.repairFrom(), c.recordsUpTo())
	}
	if !c.voters()[sr.Signer] {
		return Ready{}, fmt.Errorf("%w: %s, round %d", ErrRecordNoPower, sr.Signer, r)
	}
	vs := c.agree.votes[r]
	if vs == nil {
		vs = map[string]*incentives.Record{}
		c.agree.votes[r] = vs
	}
	if c.agree.twice[r][sr.Signer] {
		c.agree.duplicates++
		return Ready{}, fmt.Errorf("%w: %s, round %d (its vote is dropped)", ErrRecordDuplicate, sr.Signer, r)
	}
	if old, ok := vs[sr.Signer]; ok {
		if bytes.Equal(old.Marshal(), rec.Marshal()) {
			return Ready{}, nil // the same record again (resent)
		}
		ev := c.equivocated(r, sr)
		rd, err := c.redecide(r)
		rd.Publish = append(ev, rd.Publish...)
		return rd, err
	}
	vs[sr.Signer] = rec
	c.agree.gen++
	c.keepSigned(r, sr)
	if t := c.agree.tallies[r]; t != nil {
		t.add(sr.Signer, rec)
	}
	resend := c.resend(rec)
	rd, err := c.redecide(r)
	rd.Publish = append(rd.Publish, resend...)
	return rd, err
}

// redecide decides closed round r, and every closed round after it, again after its votes
// changed; a round not closed yet is decided when it closes.
func (c *Core) redecide(r uint64) (Ready, error) {
	if r >= c.nextClose {
		return Ready{}, nil
	}
	from := r
	if w := c.agree.wait; w != nil && w.from < from {
		from = w.from
	}
	return c.reconcile(from)
}

// resend returns this node's own records of the rounds in the window before rec's, once
// per round, when rec does not follow this node's state of the round before: the signer's
// chain and this one part somewhere, and each may lack the other's votes (a partition
// lost them). Receivers that hold them already ignore them.
func (c *Core) resend(rec *incentives.Record) []Message {
	if rec.Round == 0 || c.agree.resent > rec.Round {
		return nil
	}
	prev := c.agree.closed[rec.Round-1]
	if prev == nil || bytes.Equal(rec.PrevRoot, prev.record.NewRoot) {
		return nil
	}
	c.agree.resent = rec.Round + 1
	var out []Message
	for u := c.repairFrom(); u < rec.Round; u++ {
		if cr := c.agree.closed[u]; cr != nil && cr.vote.Data != nil { // none: no vote kept
			out = append(out, cr.vote)
		}
	}
	return out
}

// decide returns round r's list by the rule (docs/architecture.md, "Agreement"): once the
// records seen for r carry more than half of led's total voting power (quorum), the
// entries and evidence items listed by records carrying strictly more than half of the
// weight of all the records seen, weights being voting power by led; until then, this
// node's own record, so that no signers with less than half of the power, early or not,
// move this node off its own view.
func (c *Core) decide(r uint64, led *incentives.State) (list []incentives.Contribution, evidence []incentives.Evidence, quorum bool) {
	t := c.tallyOf(r, led)
	if all := led.TotalPower(); t.total == 0 || t.total <= all-t.total {
		own := c.agree.closed[r].own
		return own.Contributions, own.Evidence, false
	}
	list, evidence = t.canonical()
	return list, evidence, true
}

// Agreement returns where this node stands, for /status.
func (c *Core) Agreement() Agreement {
	a := Agreement{Repairs: c.agree.repairs, Duplicates: c.agree.duplicates, Equivocations: c.agree.equivocations, Stale: c.agree.stale}
	a.Agrees = c.agree.wait == nil && !a.Stale
	if c.nextClose == 0 {
		return a
	}
	a.Head = c.nextClose - 1
	copy(a.Root[:], c.ledger.Head)
	if w := c.agree.wait; w != nil {
		a.Waiting = w.need
	}
	for r := c.nextClose; r > c.repairFrom(); r-- {
		u := r - 1
		if w := c.agree.wait; w != nil && u >= w.from {
			continue
		}
		cr := c.agree.closed[u]
		if cr == nil {
			break
		}
		if _, _, quorum := c.decide(u, cr.ledger); quorum {
			a.CanonicalRound = u
			copy(a.Canonical[:], cr.record.NewRoot)
			break
		}
	}
	return a
}

// keepClosed remembers what closing round r again needs: the state before the close, the
// ledger in force at its start, every complete contribution held (own included) and this
// node's record with the message that carried it; and forgets rounds that left the window.
func (c *Core) keepClosed(r uint64, pre round.State, led *incentives.State, rec *incentives.Record, vote Message) {
	cr := &closedRound{
		pre: pre, ledger: led, held: map[string]*heldContribution{}, record: rec, own: rec, vote: vote,
		basis: fingerprint(rec.Contributions, rec.Evidence),
	}
	if ri := c.rounds[r]; ri != nil {
		for p, a := range ri.peers {
			if a.done && a.msg != nil {
				cr.hold(&heldContribution{peer: p, cids: a.cids, msg: a.msg})
			}
		}
	}
	if o := c.own[r]; o != nil && o.msg != nil {
		cr.hold(&heldContribution{peer: c.cfg.Self, cids: c.cids(r, c.cfg.Self), msg: o.msg})
	}
	c.agree.closed[r] = cr
	if c.agree.votes[r] == nil {
		c.agree.votes[r] = map[string]*incentives.Record{}
	}
	c.agree.votes[r][c.cfg.Self] = rec
	c.agree.gen++
	if t := c.agree.tallies[r]; t != nil {
		t.add(c.cfg.Self, rec)
	}
	from := c.repairFrom() // r+1 is the next to close by now
	for u := range c.agree.closed {
		if u < from {
			delete(c.agree.closed, u)
		}
	}
	for u := range c.agree.votes {
		if u < from {
			delete(c.agree.votes, u)
			delete(c.agree.tallies, u)
			c.agree.gen++
		}
	}
	c.agree.prune(from)
	if w := c.agree.wait; w != nil && w.from < from {
		c.agree.wait, c.agree.stale = nil, true // only a checkpoint brings this node back
	}
}

func (cr *closedRound) hold(h *heldContribution) { cr.held[entryKey(h.peer, h.cids)] = h }
