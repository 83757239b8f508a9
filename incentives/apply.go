package incentives

import (
	"bytes"
	"fmt"
	"math/bits"
	"slices"
	"strings"
)

// EventKind is what happened to an account in a round.
type EventKind uint8

// Event kinds.
const (
	EventReward    EventKind = 1 // Amount credited for an included contribution
	EventNoReward  EventKind = 2 // an included contribution of a jailed peer earned nothing
	EventPenalty   EventKind = 3 // Amount slashed for an offence; Evidence names the proof
	EventDuplicate EventKind = 4 // evidence of an offence already penalised: counted once
	EventRelease   EventKind = 5 // the peer's jail ended with this round
	EventDrop      EventKind = 6 // the account was dropped (MaxAccounts); Amount is the balance lost
	EventFiltered  EventKind = 7 // an included contribution the aggregation rule left out whole (Contribution.Dropped) earned nothing
)

var eventNames = []string{"", "reward", "no_reward", "penalty", "duplicate", "release", "drop", "filtered"}

func (k EventKind) String() string {
	if int(k) < len(eventNames) && k > 0 {
		return eventNames[k]
	}
	return fmt.Sprintf("event(%d)", uint8(k))
}

// Event is one change to one account, for a peer's history.
type Event struct {
	Round  uint64    `cbor:"1,keyasint"`
	Peer   string    `cbor:"2,keyasint"`
	Kind   EventKind `cbor:"3,keyasint"`
	Amount uint64    `cbor:"4,keyasint"`
	// Evidence is the ID of the evidence for penalties and duplicates.
	Evidence []byte `cbor:"5,keyasint"`
	// Offence is set for penalties and duplicates.
	Offence *Offence `cbor:"6,keyasint,omitempty"`
}

// Apply applies a committed record and returns the new state and what happened. The
// receiver is not modified. It is deterministic: the record is canonicalised first, so
// evidence and contributions in any order give the same state, byte for byte.
//
// The record is refused whole (the state is unchanged) when its round is not s.Round,
// its PrevRoot is not s.Head, any evidence fails chk.Check (ErrBadEvidence) or lies
// outside the window (ErrOutsideWindow), or its NewRoot is not the resulting root
// (ErrRootMismatch). Evidence of an offence already penalised counts once.
//
// Within a round: jails that end are released, then evidence is penalised in ID order,
// then contributions are rewarded in peer order (a peer jailed by this record's evidence
// earns nothing for it, nor does a contribution the record marks Dropped), then accounts
// beyond MaxAccounts are dropped.
func (s *State) Apply(rec *Record, chk EvidenceChecker) (*State, []Event, error) {
	r := *rec
	r.Contributions = slices.Clone(rec.Contributions)
	r.Evidence = slices.Clone(rec.Evidence)
	r.Canonicalize()
	next, events, err := s.step(&r, chk)
	if err != nil {
		return nil, nil, err
	}
	if !bytes.Equal(next.Head, r.NewRoot) {
		return nil, nil, fmt.Errorf("%w: record %d says %x, applying it gives %x", ErrRootMismatch, r.Round, r.NewRoot, next.Head)
	}
	return next, events, nil
}

// checkEvidence checks e and its window for the record of round r. When e proves an
// offence outside the window (ErrOutsideWindow), the offence is returned with the error.
func (s *State) checkEvidence(e *Evidence, chk EvidenceChecker, r uint64) (Offence, error) {
	off, err := chk.Check(e)
	if err != nil {
		return Offence{}, err
	}
	if off.Round > r || r-off.Round > s.Params.EvidenceWindow {
		return off, fmt.Errorf("%w: offence in round %d, record of round %d, window %d", ErrOutsideWindow, off.Round, r, s.Params.EvidenceWindow)
	}
	return off, nil
}

// step applies a canonical record without checking its NewRoot; next.Head is the new root.
func (s *State) step(r *Record, chk EvidenceChecker) (*State, []Event, error) {
	if r.Round != s.Round {
		return nil, nil, fmt.Errorf("%w: record of round %d, ledger expects %d", ErrRoundOrder, r.Round, s.Round)
	}
	if !bytes.Equal(r.PrevRoot, s.Head) {
		return nil, nil, fmt.Errorf("%w: record %d follows %x, ledger head is %x", ErrRootMismatch, r.Round, r.PrevRoot, s.Head)
	}
	if err := r.checkLimits(); err != nil {
		return nil, nil, err
	}
	next := s.clone()
	next.pruneSeen(r.Round)
	events := next.release(r.Round)
	evs, err := next.penalise(r, chk)
	if err != nil {
		return nil, nil, err
	}
	events = append(events, evs...)
	events = append(events, next.reward(r)...)
	events = append(events, next.evict(r)...)
	next.Round = r.Round + 1
	root := StateRoot(r.Round, r.ModelRoot, next.Root())
	next.Head = root[:]
	return next, events, nil
}

// checkLimits checks the record's shape except the roots, which Build fills afterwards.
func (r *Record) checkLimits() error {
	c := *r
	c.NewRoot = make([]byte, 32)
	return c.checkShape()
}

// pruneSeen forgets offences that no evidence can reach any more.
func (s *State) pruneSeen(r uint64) {
	w := s.Params.EvidenceWindow
	s.Seen = slices.DeleteFunc(s.Seen, func(o Offence) bool { return o.Round < r && r-o.Round > w })
}

func (s *State) release(r uint64) []Event {
	var events []Event
	for _, a := range s.Accounts {
		if a.JailedUntil == r && r > 0 {
			events = append(events, Event{Round: r, Peer: a.Peer, Kind: EventRelease})
		}
	}
	return events
}

// penalise applies the record's evidence in ID order.
func (s *State) penalise(r *Record, chk EvidenceChecker) ([]Event, error) {
	var events []Event
	for i := range r.Evidence {
		e := &r.Evidence[i]
		off, err := s.checkEvidence(e, chk, r.Round)
		if err != nil {
			return nil, fmt.Errorf("evidence %s: %w", e.ID(), err)
		}
		id := e.ID()
		ev := Event{Round: r.Round, Peer: off.Peer, Evidence: id[:], Offence: &off}
		j, seen := slices.BinarySearchFunc(s.Seen, off, Offence.compare)
		if seen {
			ev.Kind = EventDuplicate
			events = append(events, ev)
			continue
		}
		s.Seen = slices.Insert(s.Seen, j, off)
		ev.Kind, ev.Amount = EventPenalty, s.slash(off.Peer, s.Params.penalty(off.Kind), r.Round)
		events = append(events, ev)
	}
	return events, nil
}

// slash takes up to amount from peer's stake, then balance, jails it, and returns what
// was taken.
func (s *State) slash(peer string, amount, r uint64) uint64 {
	a := s.upsert(peer)
	fromStake := min(amount, a.Stake)
	a.Stake -= fromStake
	fromBalance := min(amount-fromStake, a.Balance)
	a.Balance -= fromBalance
	a.Offences++
	a.JailedUntil = max(a.JailedUntil, addSat(r+1, s.Params.JailRounds))
	return fromStake + fromBalance
}

// reward credits the record's contributions in peer order: nothing to a jailed peer
// (EventNoReward) or for a contribution the aggregation rule dropped (EventFiltered).
func (s *State) reward(r *Record) []Event {
	var events []Event
	s.addAccounts(r.Contributions)
	for _, c := range r.Contributions {
		a := s.upsert(c.Peer)
		if a.JailedUntil > r.Round {
			events = append(events, Event{Round: r.Round, Peer: c.Peer, Kind: EventNoReward})
			continue
		}
		if c.Dropped {
			events = append(events, Event{Round: r.Round, Peer: c.Peer, Kind: EventFiltered})
			continue
		}
		amt := s.Params.Reward
		if !s.staked(*a) {
			hi, lo := bits.Mul64(amt, s.Params.UnstakedWeightPPM)
			amt, _ = bits.Div64(hi, lo, PPM) // weight <= PPM, so the quotient fits
		}
		a.Balance = addSat(a.Balance, amt)
		a.Contributions++
		events = append(events, Event{Round: r.Round, Peer: c.Peer, Kind: EventReward, Amount: amt})
	}
	return events
}

// addAccounts creates empty accounts for the contributors that have none, in one merge
// (inserting them one by one would cost time quadratic in a record's contributions).
func (s *State) addAccounts(cs []Contribution) {
	var fresh []Account
	for _, c := range cs {
		if _, ok := s.account(c.Peer); !ok {
			fresh = append(fresh, Account{Peer: c.Peer})
		}
	}
	if len(fresh) == 0 {
		return
	}
	s.Accounts = append(s.Accounts, fresh...)
	slices.SortFunc(s.Accounts, func(a, b Account) int { return strings.Compare(a.Peer, b.Peer) })
}

// upsert returns peer's account, creating an empty one in sorted position.
func (s *State) upsert(peer string) *Account {
	i, ok := s.account(peer)
	if !ok {
		s.Accounts = slices.Insert(s.Accounts, i, Account{Peer: peer})
	}
	return &s.Accounts[i]
}
