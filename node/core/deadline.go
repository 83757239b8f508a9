package core

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// Defaults of the parts of DeadlineConfig the network spec does not fix: they only shape how
// this node estimates arrival times.
const (
	// DefaultWindow is how many recent observations the deadline is computed from.
	DefaultWindow = 256
	// DefaultMinObservations is how many observations the window must hold before the
	// adaptive deadline is used; with fewer, the deadline is Max.
	DefaultMinObservations = 8
	// maxK bounds k, so that k·MAD cannot overflow a duration.
	maxK = 1000
)

// DeadlineConfig is how a node decides that a round may close. Quorum, Min, Max and K come
// from the network spec (node.Params); Window and MinObservations are local, 0 meaning the
// default.
type DeadlineConfig struct {
	// Quorum is the fraction of the total stake, in (0, 1], that must have arrived before
	// the round closes at its adaptive deadline.
	Quorum float64
	// Min and Max bound the adaptive deadline; Max is also the hard limit after which a
	// round closes whatever stake arrived. 0 < Min <= Max.
	Min, Max time.Duration
	// K is the multiple of the median absolute deviation added to the median delay.
	K float64
	// Window is how many recent observations are kept (the oldest goes first).
	Window int
	// MinObservations is how many observations the window must hold for the adaptive
	// deadline to be used.
	MinObservations int
}

// ErrConfig is returned (wrapped) by NewDeadline for a configuration it cannot use.
var ErrConfig = errors.New("core: invalid deadline configuration")

func (c *DeadlineConfig) validate() error {
	if c.Window == 0 {
		c.Window = DefaultWindow
	}
	if c.MinObservations == 0 {
		c.MinObservations = DefaultMinObservations
	}
	switch {
	case !(c.Quorum > 0 && c.Quorum <= 1):
		return fmt.Errorf("%w: quorum %v not in (0, 1]", ErrConfig, c.Quorum)
	case c.Min <= 0 || c.Max < c.Min:
		return fmt.Errorf("%w: need 0 < min (%v) <= max (%v)", ErrConfig, c.Min, c.Max)
	case !(c.K >= 0 && c.K <= maxK):
		return fmt.Errorf("%w: k %v not in [0, %d]", ErrConfig, c.K, maxK)
	case c.Window < 1 || c.MinObservations < 1 || c.MinObservations > c.Window:
		return fmt.Errorf("%w: need 1 <= min observations (%d) <= window (%d)", ErrConfig, c.MinObservations, c.Window)
	}
	return nil
}

// observation is one contributor's arrival delay in one round.
type observation struct {
	round uint64
	peer  string
	delay time.Duration
}

// Deadline decides when a round may close: on a quorum of stake plus an adaptive deadline,
// clamp(median + K·MAD of recent arrival delays, Min, Max), and in any case at Max. It
// reads no clock: times come in as arguments. It is not safe for concurrent use (the
// round loop owns it).
//
// # Observations
//
// Observe records the delay between a round's start and the arrival of one contributor's
// contribution to it (the caller records contributions that passed validation). Each delay
// is clamped to [0, Max] before it is kept, each (round, peer) pair counts once, and only
// the last Window observations are kept, in arrival order: the deadline is a deterministic
// function of the observations in the window.
//
// # Too few observations
//
// With fewer than MinObservations in the window the deadline is Max. A median of a handful
// of delays says little, and the other choice, Min, would let the first peer (or an
// attacker arriving at once) cut honest slower peers out of the first rounds. Max costs
// nothing when every expected contributor arrives (the round then closes on the quorum
// alone) and only bounds the wait when some do not.
//
// # What an adversary can do
//
// A peer controls when its own contribution arrives, so it can arrive late (or early) on
// purpose. Median and MAD have a breakdown point of one half: while the adversary's
// observations are fewer than half of those in the window, the median stays between the
// smallest and largest honest delay, and the MAD at most the spread of the honest delays,
// so the deadline stays within [lo, hi + K·(hi − lo)] (lo, hi the smallest and largest
// honest delay), clamped to [Min, Max], however late or early the adversary arrives.
// An adversary holding more than half of the window can place the deadline anywhere in
// [Min, Max] and no further: at worst each round waits Max, or closes at Min with the
// quorum of stake in. A peer that never arrives adds no observation and holds no round past
// Max. The window counts observations, not stake: many cheap identities count as many
// observers, which is why the bounds above, not the adversary's stake, are the guarantee.
type Deadline struct {
	cfg  DeadlineConfig
	ring []observation // the window, oldest at next once full
	next int
	seen map[observation]struct{} // (round, peer) pairs in the window; delay is zero
}

// NewDeadline returns a Deadline with no observations. It fails on a configuration outside
// the bounds DeadlineConfig documents, filling defaults first.
func NewDeadline(cfg DeadlineConfig) (*Deadline, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Deadline{cfg: cfg, ring: make([]observation, 0, cfg.Window), seen: make(map[observation]struct{})}, nil
}

// Config returns the configuration in use, defaults filled.
func (d *Deadline) Config() DeadlineConfig { return d.cfg }

// Observe records that peer's contribution to round arrived at arrival, the round having
// started at start. The delay is clamped to [0, Max]. A second observation of the same
// peer and round, while the first is in the window, is ignored; it reports whether the
// observation was kept.
func (d *Deadline) Observe(round uint64, peer string, start, arrival time.Time) bool {
	key := observation{round: round, peer: peer}
	if _, dup := d.seen[key]; dup {
		return false
	}
	o := key
	o.delay = min(max(arrival.Sub(start), 0), d.cfg.Max)
	if len(d.ring) < d.cfg.Window {
		d.ring = append(d.ring, o)
	} else {
		old := d.ring[d.next]
		delete(d.seen, observation{round: old.round, peer: old.peer})
		d.ring[d.next] = o
		d.next = (d.next + 1) % d.cfg.Window
	}
	d.seen[key] = struct{}{}
	return true
}

// Len is the number of observations in the window.
func (d *Deadline) Len() int { return len(d.ring) }

// Current is the adaptive deadline, measured from a round's start: clamp(median + K·MAD of
// the delays in the window, Min, Max), or Max with fewer than MinObservations.
func (d *Deadline) Current() time.Duration {
	if len(d.ring) < d.cfg.MinObservations {
		return d.cfg.Max
	}
	xs := make([]time.Duration, len(d.ring))
	for i, o := range d.ring {
		xs[i] = o.delay
	}
	med, mad := medianMAD(xs)
	return clampDeadline(med, mad, d.cfg)
}

// clampDeadline is clamp(med + k·mad, Min, Max), without overflow: med and mad are at most
// Max, and k at most maxK.
func clampDeadline(med, mad time.Duration, c DeadlineConfig) time.Duration {
	spread := float64(c.Max - med)
	if extra := c.K * float64(mad); extra < spread {
		return max(med+time.Duration(extra), c.Min)
	}
	return c.Max
}

// medianMAD returns the median of xs and the median of |x − median|, the median of an even
// count being the mean of the two middle values (rounded down). xs must not be empty; it
// is reordered.
func medianMAD(xs []time.Duration) (med, mad time.Duration) {
	med = median(xs)
	for i, x := range xs {
		if x < med {
			xs[i] = med - x
		} else {
			xs[i] = x - med
		}
	}
	return med, median(xs)
}

func median(xs []time.Duration) time.Duration {
	slices.Sort(xs)
	n := len(xs)
	lo, hi := xs[(n-1)/2], xs[n/2]
	return lo + (hi-lo)/2
}

// Quorum reports whether received stake reaches the quorum fraction of total. With no
// stake at all (total 0) the quorum is met: there is nothing to wait for.
func (d *Deadline) Quorum(received, total uint64) bool {
	if received >= total {
		return true
	}
	need := math.Ceil(d.cfg.Quorum * float64(total))
	return float64(received) >= need
}

// Closable reports whether a round that started at start may close at now, with received
// of total stake arrived and all true when every expected contributor has arrived: when
// the quorum is met and either all arrived or the adaptive deadline has passed, or, whatever
// the stake, when Max has passed. A slow or silent peer never holds a round past Max.
func (d *Deadline) Closable(now, start time.Time, received, total uint64, all bool) bool {
	elapsed := now.Sub(start)
	if elapsed >= d.cfg.Max {
		return true
	}
	if !d.Quorum(received, total) {
		return false
	}
	return all || elapsed >= d.Current()
}
