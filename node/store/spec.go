package store

import (
	"fmt"
	"math"
	"slices"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/node/attest"
)

// ParamsFromSpec turns the network spec's incentives section into the ledger's parameters
// and genesis. The unstaked weight (a fraction) becomes parts per million, rounded to
// nearest. Genesis stakes are listed in peer order.
func ParamsFromSpec(s configs.IncentivesSpec) (incentives.Params, incentives.Genesis, error) {
	if math.IsNaN(s.UnstakedWeight) || s.UnstakedWeight < 0 || s.UnstakedWeight > 1 {
		return incentives.Params{}, incentives.Genesis{}, &configs.KeyError{Key: "incentives.unstaked_weight", Err: fmt.Errorf("%v is not in [0, 1]", s.UnstakedWeight)}
	}
	p := incentives.Params{
		MinStake:          s.MinStake,
		Reward:            s.Reward,
		JailRounds:        s.JailRounds,
		UnstakedWeightPPM: uint64(math.Round(s.UnstakedWeight * incentives.PPM)),
		EvidenceWindow:    s.EvidenceWindow,
	}
	p.Penalties[incentives.KindEquivocation] = s.Penalties.Equivocation
	p.Penalties[incentives.KindInvalidAttestation] = s.Penalties.InvalidAttestation
	p.Penalties[incentives.KindInvalidContent] = s.Penalties.InvalidContent
	var g incentives.Genesis
	for peer, amt := range s.Stakes {
		g.Stakes = append(g.Stakes, incentives.Stake{Peer: peer, Amount: amt})
	}
	slices.SortFunc(g.Stakes, func(a, b incentives.Stake) int {
		if a.Peer < b.Peer {
			return -1
		}
		if a.Peer > b.Peer {
			return 1
		}
		return 0
	})
	if err := p.Validate(); err != nil {
		return p, g, err
	}
	if err := g.Validate(); err != nil {
		return p, g, err
	}
	return p, g, nil
}

// GenesisFromSpec is the genesis ledger of a network spec.
func GenesisFromSpec(s configs.IncentivesSpec) (*incentives.State, error) {
	p, g, err := ParamsFromSpec(s)
	if err != nil {
		return nil, err
	}
	return incentives.NewState(p, g)
}

// CheckerFromSpec is the evidence checker of a network: its network ID and run, its
// attestation policy, and content, the deterministic content check of a shard payload
// (training/compress.CheckShard with the model's shapes, norm bound and limits; nil refuses
// all invalid-content evidence). node.NewParams builds it, with that content check, for the
// node and for offline replay alike.
//
// Evidence is timed by the spec's time base, never the clock: a bundle of epoch e is
// checked at genesis_time + e x epoch_rounds x round_seconds, so a record gives the same
// verdict on every node and at every replay, whenever it runs.
func CheckerFromSpec(s *configs.Spec, content func(payload []byte) error) (*incentives.Checker, error) {
	net := s.NetworkID()
	p, err := attest.PolicyFromSpec(s.Attest, net, s.Run)
	if err != nil {
		return nil, err
	}
	epochTime, err := s.Time.EpochClock(s.Attest.EpochRounds)
	if err != nil {
		return nil, err
	}
	return &incentives.Checker{Network: net, Run: s.Run, Policy: p, EpochTime: epochTime, EpochRounds: s.Attest.EpochRounds, ContentCheck: content}, nil
}
