package configs

import (
	"fmt"
	"math/bits"
	"time"
)

// Defaults and bounds of the time base.
const (
	// DefaultGenesisTime is the genesis time of a spec that names none.
	DefaultGenesisTime = "2026-01-01T00:00:00Z"
	defaultRoundSecs   = 60
	maxRoundSecs       = 24 * 60 * 60
	// maxEpochOffset caps how far past genesis an epoch is placed (about 500 years): a
	// bundle can claim any epoch number, and its time must not overflow.
	maxEpochOffset = 1 << 34
)

// TimeSpec is the network's time base: the one clock every node agrees on, used where a
// verdict must not depend on a node's own clock (certificate validity of attestation
// evidence). It is a nominal schedule, not a deadline: rounds may run faster or slower.
type TimeSpec struct {
	// GenesisTime is the network's start, RFC 3339 (e.g. "2026-01-01T00:00:00Z").
	GenesisTime string `toml:"genesis_time" cbor:"1,keyasint" comment:"network start, RFC 3339; evidence of epoch e is judged at genesis + e x epoch_rounds x round_seconds"`
	// RoundSeconds is the nominal length of one round, in seconds.
	RoundSeconds uint64 `toml:"round_seconds" cbor:"2,keyasint" comment:"nominal length of one round, seconds"`
}

func (t *TimeSpec) validate() error {
	if t.GenesisTime == "" {
		t.GenesisTime = DefaultGenesisTime
	}
	if t.RoundSeconds == 0 {
		t.RoundSeconds = defaultRoundSecs
	}
	g, err := time.Parse(time.RFC3339, t.GenesisTime)
	if err != nil {
		return &KeyError{Key: "genesis_time", Err: fmt.Errorf("%q is not an RFC 3339 time (like %s)", t.GenesisTime, DefaultGenesisTime)}
	}
	if g.Year() < 2000 || g.Year() > 9000 {
		return &KeyError{Key: "genesis_time", Err: fmt.Errorf("year %d not in [2000, 9000]", g.Year())}
	}
	if t.RoundSeconds > maxRoundSecs {
		return &KeyError{Key: "round_seconds", Err: fmt.Errorf("%d not in [1, %d]", t.RoundSeconds, maxRoundSecs)}
	}
	return nil
}

// EpochClock returns the time base of attestation epochs of epochRounds rounds: epoch e
// starts at genesis + e x epochRounds x RoundSeconds, saturating at about 500 years past
// genesis whatever epoch a bundle claims. The returned function is pure. It fails when the
// genesis time does not parse (a spec that was not validated).
func (t TimeSpec) EpochClock(epochRounds uint64) (func(epoch uint64) time.Time, error) {
	g, err := time.Parse(time.RFC3339, t.GenesisTime)
	if err != nil {
		return nil, &KeyError{Key: "time.genesis_time", Err: fmt.Errorf("%q is not an RFC 3339 time", t.GenesisTime)}
	}
	step := t.RoundSeconds
	return func(epoch uint64) time.Time {
		secs := uint64(maxEpochOffset)
		if hi, lo := bits.Mul64(epoch, epochRounds); hi == 0 {
			if hi, lo = bits.Mul64(lo, step); hi == 0 {
				secs = min(lo, maxEpochOffset)
			}
		}
		return time.Unix(g.Unix()+int64(secs), int64(g.Nanosecond())).UTC()
	}, nil
}
