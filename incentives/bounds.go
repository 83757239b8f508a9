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
	// MaxAccounts caps the accounts of a ledger. When a record leaves more, the unstaked
	// accounts with the smallest balance (then fewest contributions, then by peer) are
	// dropped until MaxAccounts remain. Accounts holding stake are never dropped.
	MaxAccounts = 1 << 15
	// MaxGenesisStakes caps the genesis allocation, so stake holders never fill the ledger.
	MaxGenesisStakes = 10000
	// maxSeen bounds the remembered offences: at most MaxEvidencePerRecord per record, each
	// kept for the evidence window.
	maxSeen = MaxEvidencePerRecord * (MaxEvidenceWindow + 1)
)

// evict drops accounts beyond MaxAccounts, the least valuable unstaked ones first, and
// returns an EventDrop for each. It is a pure function of the state: every node drops the
// same accounts.
func (s *State) evict(r uint64) []Event {
	excess := len(s.Accounts) - MaxAccounts
	if excess <= 0 {
		return nil
	}
	var cands []Account
	for _, a := range s.Accounts {
		if a.Stake == 0 {
			cands = append(cands, a)
		}
	}
	slices.SortFunc(cands, func(a, b Account) int {
		return cmp.Or(cmp.Compare(a.Balance, b.Balance), cmp.Compare(a.Contributions, b.Contributions), strings.Compare(a.Peer, b.Peer))
	})
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
