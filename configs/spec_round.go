package configs

// Defaults and bounds of the round-closing rule.
const (
	DefaultQuorum = 0.67
	// DefaultDeadlineMin is long because, until nodes repair a round they closed without
	// someone's contribution, a peer left out at one node and not at another splits their
	// roots: on busy machines a few seconds late is common. A round that has every staked
	// contribution closes at once, so the wait costs only when a peer is really missing.
	DefaultDeadlineMin = 30.0  // seconds
	DefaultDeadlineMax = 120.0 // seconds
	DefaultDeadlineK   = 3.0
	// MaxDeadlineK bounds deadline_k (the node's decision code refuses more).
	MaxDeadlineK = 1000
)

// RoundSpec is when a node closes a round: once the stake received reaches Quorum of the
// total and either every expected contributor arrived or the adaptive deadline passed
// (median + DeadlineK·MAD of the arrival delays the node observed, clamped to
// [DeadlineMin, DeadlineMax]), and, whatever the stake, once DeadlineMax passed. Zero
// values take the defaults.
type RoundSpec struct {
	// Quorum is the fraction of the total stake, in (0, 1], a round waits for.
	Quorum float64 `toml:"quorum" cbor:"1,keyasint" comment:"fraction of the total stake a round waits for, (0, 1]"`
	// DeadlineMin and DeadlineMax bound the adaptive deadline, in seconds from the round's
	// start; DeadlineMax is also the hard limit a round never waits past.
	DeadlineMin float64 `toml:"deadline_min" cbor:"2,keyasint" comment:"lower bound of the adaptive deadline, seconds"`
	DeadlineMax float64 `toml:"deadline_max" cbor:"3,keyasint" comment:"upper bound of the adaptive deadline and hard limit of a round's wait, seconds"`
	// DeadlineK is k in median + k·MAD.
	DeadlineK float64 `toml:"deadline_k" cbor:"4,keyasint" comment:"k in median + k x MAD of the observed arrival delays"`
}

func (r *RoundSpec) validate() error {
	if r.Quorum == 0 {
		r.Quorum = DefaultQuorum
	}
	if r.DeadlineMax == 0 {
		r.DeadlineMax = DefaultDeadlineMax
	}
	if r.DeadlineMin == 0 {
		r.DeadlineMin = min(DefaultDeadlineMin, r.DeadlineMax)
	}
	if r.DeadlineK == 0 {
		r.DeadlineK = DefaultDeadlineK
	}
	switch {
	case !(r.Quorum > 0 && r.Quorum <= 1):
		return keyErr("quorum", "%v is not in (0, 1]", r.Quorum)
	case !(r.DeadlineMax > 0 && r.DeadlineMax <= maxRoundSecs):
		return keyErr("deadline_max", "%v seconds is not in (0, %d]", r.DeadlineMax, maxRoundSecs)
	case !(r.DeadlineMin > 0 && r.DeadlineMin <= r.DeadlineMax):
		return keyErr("deadline_min", "%v seconds is not in (0, deadline_max = %v]", r.DeadlineMin, r.DeadlineMax)
	case !(r.DeadlineK > 0 && r.DeadlineK <= MaxDeadlineK):
		return keyErr("deadline_k", "%v is not in (0, %d]", r.DeadlineK, MaxDeadlineK)
	}
	return nil
}
