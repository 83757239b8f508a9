package incentives

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lowband/lowband/verify"
)

// PPM is the denominator of weights given in parts per million.
const PPM = 1_000_000

// MaxEvidenceWindow bounds Params.EvidenceWindow (as the network spec does): the ledger
// remembers penalised offences for that many rounds.
const MaxEvidenceWindow = 1024

// Params are the ledger's rules, fixed at genesis. Every node of a network holds the same.
type Params struct {
	// MinStake is the stake from which a peer counts fully: whole reward, voting power.
	MinStake uint64 `cbor:"1,keyasint"`
	// Reward is credited per included contribution of a fully staked peer.
	Reward uint64 `cbor:"2,keyasint"`
	// Penalties is indexed by Kind (index 0 unused); KindRecordEquivocation takes
	// KindEquivocation's (see penalty).
	Penalties [numPenalties]uint64 `cbor:"3,keyasint"`
	// JailRounds is how many rounds after the record that includes its evidence an
	// offender stays jailed.
	JailRounds uint64 `cbor:"4,keyasint"`
	// UnstakedWeightPPM scales the reward of a peer below MinStake, in parts per million.
	UnstakedWeightPPM uint64 `cbor:"5,keyasint"`
	// EvidenceWindow: evidence about round o is accepted in the record of round r only if
	// o <= r <= o+EvidenceWindow.
	EvidenceWindow uint64 `cbor:"6,keyasint"`
}

// penalty is what an offence of kind k takes: a vote cast twice is punished as a shard
// signed twice.
func (p *Params) penalty(k Kind) uint64 {
	if k == KindRecordEquivocation {
		k = KindEquivocation
	}
	if int(k) >= len(p.Penalties) {
		return 0
	}
	return p.Penalties[k]
}

// Stake is one genesis allocation.
type Stake struct {
	Peer   string `cbor:"1,keyasint"`
	Amount uint64 `cbor:"2,keyasint"`
}

// Genesis is the initial allocation of stake. Peers are peer IDs in their one canonical text
// form (verify.ParsePeerID), as in records.
type Genesis struct {
	Stakes []Stake `cbor:"1,keyasint"`
}

// Validate checks the parameters.
func (p *Params) Validate() error {
	if p.UnstakedWeightPPM > PPM {
		return fmt.Errorf("%w: unstaked weight %d ppm is over %d", ErrBadParams, p.UnstakedWeightPPM, PPM)
	}
	if p.EvidenceWindow > MaxEvidenceWindow {
		return fmt.Errorf("%w: evidence window of %d rounds, limit %d", ErrBadParams, p.EvidenceWindow, MaxEvidenceWindow)
	}
	if p.Penalties[0] != 0 {
		return fmt.Errorf("%w: penalty for kind 0 must be 0", ErrBadParams)
	}
	return nil
}

// Validate checks the genesis: distinct peers in canonical form and positive amounts.
func (g *Genesis) Validate() error {
	if len(g.Stakes) > MaxGenesisStakes {
		return fmt.Errorf("%w: %d genesis stakes, limit %d", ErrBadParams, len(g.Stakes), MaxGenesisStakes)
	}
	seen := make(map[string]bool, len(g.Stakes))
	for _, s := range g.Stakes {
		if err := verify.CheckPeerID(s.Peer); err != nil {
			return fmt.Errorf("%w: genesis: %v", ErrBadParams, err)
		}
		switch {
		case s.Amount == 0:
			return fmt.Errorf("%w: genesis stake of %s is zero", ErrBadParams, s.Peer)
		case seen[s.Peer]:
			return fmt.Errorf("%w: %s appears twice in genesis", ErrBadParams, s.Peer)
		}
		seen[s.Peer] = true
	}
	return nil
}

// sorted returns the stakes sorted by peer.
func (g *Genesis) sorted() []Stake {
	out := slices.Clone(g.Stakes)
	slices.SortFunc(out, func(a, b Stake) int { return strings.Compare(a.Peer, b.Peer) })
	return out
}
