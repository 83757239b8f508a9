package incentives

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Bounds on the ledger state. Every peer named by a record gets an account and every
// penalised offence is remembered for the evidence window; without bounds a flood of new
// identities would grow the state until it no longer fits MaxStateSize and the store could
// not open.
const (
	// MaxAccounts caps the accounts of a ledger. When a record leaves more, unstaked
	// accounts are dropped until MaxAccounts remain: those the record does not reward
	// first, then the smallest balance, fewest contributions, by peer. Accounts holding
	// stake are never dropped.
	MaxAccounts = 1 << 15
	// MaxGenesisStakes caps the genesis allocation, so stake holders never fill the ledger.
	MaxGenesisStakes = 10000
	// maxSeen bounds the remembered offences: at most MaxEvidencePerRecord per record, each
	// kept for the evidence window.
	maxSeen = MaxEvidencePerRecord * (MaxEvidenceWindow + 1)
)

// evict drops accounts beyond MaxAccounts, the least valuable unstaked ones first, and
// returns an EventDrop for each. It is a pure function of the state and the record: every
// node drops the same accounts. The record's contributors go last: otherwise identities
// that filled the ledger once with a little more balance would drop every new contributor
// at the end of each round it contributes in, so that it never earns more than one reward.
// A contribution the record marks Dropped earns nothing and protects nothing: its peer
// goes with the idle accounts.
func (s *State) evict(rec *Record) []Event {
	r := rec.Round
	excess := len(s.Accounts) - MaxAccounts
	if excess <= 0 {
		return nil
	}
	// Accounts and contributions are both sorted by peer: one merge splits the unstaked
	// accounts into those the record rewards and the rest.
	var idle, active []Account
	cs := rec.Contributions
	for _, a := range s.Accounts {
		for len(cs) > 0 && cs[0].Peer < a.Peer {
			cs = cs[1:]
		}
		switch {
		case a.Stake != 0:
		case len(cs) > 0 && cs[0].Peer == a.Peer && !cs[0].Dropped:
			active = append(active, a)
		default:
			idle = append(idle, a)
		}
	}
	byValue := func(a, b Account) int {
		return cmp.Or(cmp.Compare(a.Balance, b.Balance), cmp.Compare(a.Contributions, b.Contributions), strings.Compare(a.Peer, b.Peer))
	}
	slices.SortFunc(idle, byValue)
	slices.SortFunc(active, byValue)
	cands := append(idle, active...)
	cands = cands[:min(excess, len(cands))]
	drop := make(map[string]bool, len(cands))
	events := make([]Event, 0, len(cands))
	for _, a := range cands {
		drop[a.Peer] = true
		events = append(events, Event{Round: r, Peer: a.Peer, Kind: EventDrop, Amount: a.Balance})
	}
	s.Accounts = slices.DeleteFunc(s.Accounts, func(a Account) bool { return drop[a.Peer] })
	slices.SortFunc(events, func(a, b Event) int { return strings.Compare(a.Peer, b.Peer) })
	return events
}

// checkBounds refuses a stored state over the bounds: no ledger reaches it.
func (s *State) checkBounds() error {
	switch {
	case len(s.Accounts) > MaxAccounts:
		return fmt.Errorf("%w: %d accounts, limit %d", ErrMalformed, len(s.Accounts), MaxAccounts)
	case len(s.Seen) > maxSeen:
		return fmt.Errorf("%w: %d remembered offences, limit %d", ErrMalformed, len(s.Seen), maxSeen)
	}
	return nil
}
