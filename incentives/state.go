package incentives

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
)

// StateVersion is the ledger state encoding this package reads and writes.
const StateVersion = 1

// Account is one peer's entry in the ledger.
type Account struct {
	Peer string `cbor:"1,keyasint"`
	// Stake is bonded: it counts as voting power (at MinStake or more) and is slashed first.
	Stake uint64 `cbor:"2,keyasint"`
	// Balance is earned rewards. Penalties take what Stake cannot cover from it.
	Balance uint64 `cbor:"3,keyasint"`
	// JailedUntil is the first round at which the peer is free again; the peer is jailed
	// while the ledger's next round is below it. 0: never jailed.
	JailedUntil uint64 `cbor:"4,keyasint"`
	// Offences counts penalised offences; Contributions counts rewarded contributions.
	Offences      uint64 `cbor:"5,keyasint"`
	Contributions uint64 `cbor:"6,keyasint"`
}

// State is the ledger: a value. Apply returns a new State and never modifies its receiver,
// so a State may be read from many goroutines. Its fields are exported for encoding only;
// use the query methods.
type State struct {
	Version uint8  `cbor:"1,keyasint"`
	Params  Params `cbor:"2,keyasint"`
	// Round is the next round the ledger expects a record for.
	Round uint64 `cbor:"3,keyasint"`
	// Head is the NewRoot of the last applied record, or the genesis root.
	Head     []byte    `cbor:"4,keyasint"`
	Accounts []Account `cbor:"5,keyasint"` // sorted by peer, distinct
	// Seen holds the offences already penalised whose round is still inside the evidence
	// window, sorted: evidence about them counts once.
	Seen []Offence `cbor:"6,keyasint"`
}

// NewState returns the genesis ledger. Its Head is the genesis root: the hash of the
// genesis state with an empty head.
func NewState(p Params, g Genesis) (*State, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := g.Validate(); err != nil {
		return nil, err
	}
	s := &State{Version: StateVersion, Params: p}
	for _, st := range g.sorted() {
		s.Accounts = append(s.Accounts, Account{Peer: st.Peer, Stake: st.Amount})
	}
	root := s.Root()
	s.Head = root[:]
	return s, nil
}

const domainLedger = "lowband/ledger/v1\x00"

// Marshal returns the canonical encoding of the state.
func (s *State) Marshal() []byte { return marshal(s) }

// Root is the ledger root: SHA-256 over a domain tag and the canonical encoding.
func (s *State) Root() [32]byte {
	return sha256.Sum256(append([]byte(domainLedger), s.Marshal()...))
}

// DecodeState decodes a stored state, refusing anything but a canonical, well-formed one.
func DecodeState(data []byte) (*State, error) {
	var s State
	if err := decodeCanonical(stateDecMode, "ledger state", data, MaxStateSize, &s); err != nil {
		return nil, err
	}
	if s.Version != StateVersion {
		return nil, fmt.Errorf("%w: state version %d, this build reads %d", ErrMalformed, s.Version, StateVersion)
	}
	if err := s.Params.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if err := s.checkBounds(); err != nil {
		return nil, err
	}
	for i := 1; i < len(s.Accounts); i++ {
		if s.Accounts[i-1].Peer >= s.Accounts[i].Peer {
			return nil, fmt.Errorf("%w: accounts not sorted", ErrMalformed)
		}
	}
	for i := 1; i < len(s.Seen); i++ {
		if s.Seen[i-1].compare(s.Seen[i]) >= 0 {
			return nil, fmt.Errorf("%w: offences not sorted", ErrMalformed)
		}
	}
	return &s, nil
}

// Equal reports whether two states are byte-identical.
func (s *State) Equal(t *State) bool { return bytes.Equal(s.Marshal(), t.Marshal()) }

func (s *State) clone() *State {
	c := *s
	c.Head = slices.Clone(s.Head)
	c.Accounts = slices.Clone(s.Accounts)
	c.Seen = slices.Clone(s.Seen)
	return &c
}

// account returns the index of peer's account and whether it exists.
func (s *State) account(peer string) (int, bool) {
	return slices.BinarySearchFunc(s.Accounts, peer, func(a Account, p string) int { return strings.Compare(a.Peer, p) })
}

// Account returns a copy of peer's account (zero, with Peer set, when it has none).
func (s *State) Account(peer string) Account {
	if i, ok := s.account(peer); ok {
		return s.Accounts[i]
	}
	return Account{Peer: peer}
}

// Balance is peer's earned balance.
func (s *State) Balance(peer string) uint64 { return s.Account(peer).Balance }

// Stake is peer's bonded stake.
func (s *State) Stake(peer string) uint64 { return s.Account(peer).Stake }

// Jailed reports whether peer is jailed for the next round.
func (s *State) Jailed(peer string) bool { return s.jailed(s.Account(peer)) }

func (s *State) jailed(a Account) bool { return a.JailedUntil > s.Round }

// staked reports whether a counts fully: positive stake at least MinStake.
func (s *State) staked(a Account) bool { return a.Stake > 0 && a.Stake >= s.Params.MinStake }

// Power is peer's voting power for agreement: its stake if it counts fully and is not
// jailed, else 0.
func (s *State) Power(peer string) uint64 { return s.power(s.Account(peer)) }

func (s *State) power(a Account) uint64 {
	if !s.staked(a) || s.jailed(a) {
		return 0
	}
	return a.Stake
}

// TotalPower is the sum of every peer's voting power.
func (s *State) TotalPower() uint64 {
	var t uint64
	for _, a := range s.Accounts {
		t = addSat(t, s.power(a))
	}
	return t
}

// Canonical returns the root held by a stake-weighted majority (more than half of the
// total power) among votes (peer -> root it reports), and false when no root has one.
func (s *State) Canonical(votes map[string][]byte) ([]byte, bool) {
	total := s.TotalPower()
	byRoot := make(map[string]uint64)
	for peer, root := range votes {
		byRoot[string(root)] = addSat(byRoot[string(root)], s.Power(peer)) // integer sums: order-free
	}
	for root, p := range byRoot {
		if total > 0 && p > total-p {
			return []byte(root), true
		}
	}
	return nil, false
}

func addSat(a, b uint64) uint64 {
	if a+b < a {
		return ^uint64(0)
	}
	return a + b
}
