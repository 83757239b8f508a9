package configs

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// IncentivesSpec holds genesis stakes and the ledger's parameters. Amounts are whole units
// of stake; rounds count committed rounds. The zero value is valid: nobody holds stake and
// nothing is rewarded or slashed.
type IncentivesSpec struct {
	// Stakes is the genesis stake of each peer, by peer ID in its canonical text form
	// (12D3KooW...: base58, with the peer's Ed25519 key embedded). Other forms of an ID
	// (bafz..., k51...) are refused, so one peer cannot hold two accounts.
	Stakes map[string]uint64 `toml:"stakes" cbor:"1,keyasint" comment:"genesis stake by peer ID"`
	// MinStake is the stake from which a peer counts fully: its contributions earn the whole
	// reward and its stake counts as voting power. Below it, a peer is treated as unstaked.
	MinStake uint64 `toml:"min_stake" cbor:"2,keyasint" comment:"stake from which a peer counts fully (reward and voting power)"`
	// Reward is credited for each included contribution of a fully staked peer.
	Reward uint64 `toml:"reward" cbor:"3,keyasint" comment:"reward per included contribution"`
	// Penalties is what each kind of included evidence takes from the offender.
	Penalties PenaltySpec `toml:"penalties" cbor:"4,keyasint"`
	// JailRounds is how many rounds an offender is jailed (no reward, no voting power).
	JailRounds uint64 `toml:"jail_rounds" cbor:"5,keyasint" comment:"rounds an offender stays jailed"`
	// UnstakedWeight, in [0, 1], scales the reward of a contribution from a peer below
	// MinStake: the network is permissionless and newcomers earn from their first round.
	UnstakedWeight float64 `toml:"unstaked_weight" cbor:"6,keyasint" comment:"share of the reward earned by peers below min_stake, 0 to 1"`
	// EvidenceWindow is how many rounds back evidence may reach: evidence about round o is
	// accepted in the record of round r only if o <= r <= o + EvidenceWindow.
	EvidenceWindow uint64 `toml:"evidence_window" cbor:"7,keyasint" comment:"rounds after an offence during which its evidence is accepted"`
}

// PenaltySpec is the penalty per kind of evidence.
type PenaltySpec struct {
	Equivocation       uint64 `toml:"equivocation" cbor:"1,keyasint" comment:"two different shards signed for one peer, round and index"`
	InvalidAttestation uint64 `toml:"invalid_attestation" cbor:"2,keyasint" comment:"a signed shard whose bundle provably fails the policy"`
	InvalidContent     uint64 `toml:"invalid_content" cbor:"3,keyasint" comment:"a signed shard that fails the content checks"`
}

// MaxGenesisStakes caps the genesis list; the spec is hashed and gossiped as a whole.
const MaxGenesisStakes = 10000

// MaxEvidenceWindow keeps the ledger's memory of past offences bounded; the ledger
// (incentives.MaxEvidenceWindow) allows the same.
const MaxEvidenceWindow = 1024

func (i *IncentivesSpec) validate() error {
	if len(i.Stakes) > MaxGenesisStakes {
		return &KeyError{Key: "stakes", Err: fmt.Errorf("%d entries, more than the %d allowed", len(i.Stakes), MaxGenesisStakes)}
	}
	ids := make([]string, 0, len(i.Stakes))
	for id := range i.Stakes {
		ids = append(ids, id)
	}
	slices.Sort(ids) // report the first bad key in a stable order
	var total uint64
	for _, id := range ids {
		if err := checkPeerID(id); err != nil {
			return &KeyError{Key: "stakes." + id, Err: err}
		}
		amt := i.Stakes[id]
		if amt == 0 {
			return &KeyError{Key: "stakes." + id, Err: errors.New("a genesis stake must be positive")}
		}
		if total+amt < total {
			return &KeyError{Key: "stakes." + id, Err: errors.New("total genesis stake overflows")}
		}
		total += amt
	}
	if math.IsNaN(i.UnstakedWeight) || i.UnstakedWeight < 0 || i.UnstakedWeight > 1 {
		return &KeyError{Key: "unstaked_weight", Err: fmt.Errorf("%v is not in [0, 1]", i.UnstakedWeight)}
	}
	if i.EvidenceWindow > MaxEvidenceWindow {
		return &KeyError{Key: "evidence_window", Err: fmt.Errorf("%d rounds, more than the %d allowed", i.EvidenceWindow, MaxEvidenceWindow)}
	}
	if i.JailRounds > math.MaxUint32 {
		return &KeyError{Key: "jail_rounds", Err: fmt.Errorf("%d rounds is too many", i.JailRounds)}
	}
	return nil
}
