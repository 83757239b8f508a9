package core

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func cfg() DeadlineConfig {
	return DeadlineConfig{Quorum: 0.67, Min: 2 * time.Second, Max: 60 * time.Second, K: 3, Window: 16, MinObservations: 4}
}

func newDeadline(t *testing.T, c DeadlineConfig) *Deadline {
	t.Helper()
	d, err := NewDeadline(c)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// peerSeq names the peers observe makes up, each new.
var peerSeq int

// observe records one observation per delay, each from a new peer, all in round 0.
func observe(d *Deadline, delays ...time.Duration) {
	for _, x := range delays {
		peerSeq++
		d.Observe(0, fmt.Sprintf("p%d", peerSeq), t0, t0.Add(x))
	}
}

func secs(xs ...float64) []time.Duration {
	out := make([]time.Duration, len(xs))
	for i, x := range xs {
		out[i] = time.Duration(x * float64(time.Second))
	}
	return out
}

func TestDeadlineConfigRefused(t *testing.T) {
	for name, mut := range map[string]func(*DeadlineConfig){
		"quorum 0":         func(c *DeadlineConfig) { c.Quorum = 0 },
		"quorum > 1":       func(c *DeadlineConfig) { c.Quorum = 1.5 },
		"min 0":            func(c *DeadlineConfig) { c.Min = 0 },
		"max < min":        func(c *DeadlineConfig) { c.Max = time.Second },
		"k negative":       func(c *DeadlineConfig) { c.K = -1 },
		"k huge":           func(c *DeadlineConfig) { c.K = 1e9 },
		"min obs > window": func(c *DeadlineConfig) { c.MinObservations = 17 },
	} {
		c := cfg()
		mut(&c)
		if _, err := NewDeadline(c); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: got %v, want ErrConfig", name, err)
		}
	}
	d := newDeadline(t, DeadlineConfig{Quorum: 1, Min: time.Second, Max: time.Second})
	if c := d.Config(); c.Window != DefaultWindow || c.MinObservations != DefaultMinObservations {
		t.Errorf("defaults not filled: %+v", c)
	}
}

func TestDeadlineCurrent(t *testing.T) {
	for _, c := range []struct {
		name   string
		delays []time.Duration
		want   time.Duration
	}{
		{"too few observations: max", secs(1, 1, 1), 60 * time.Second},
		{"no spread: median", secs(5, 5, 5, 5), 5 * time.Second},
		{"median + 3 MAD", secs(4, 5, 6, 7, 8), 6*time.Second + 3*time.Second},
		{"even count: mean of middles", secs(4, 5, 7, 8), 6*time.Second + 3*1500*time.Millisecond},
		{"clamped to min", secs(0.1, 0.1, 0.1, 0.1), 2 * time.Second},
		{"clamped to max", secs(10, 20, 30, 40, 50), 60 * time.Second},
		{"negative delays count as 0", secs(-5, -5, 3, 3, 3), 3 * time.Second},
		{"one outlier moves little", secs(4, 5, 6, 7, 3600), 6*time.Second + 3*time.Second},
	} {
		d := newDeadline(t, cfg())
		observe(d, c.delays...)
		if got := d.Current(); got != c.want {
			t.Errorf("%s: deadline %v, want %v", c.name, got, c.want)
		}
	}
}

func TestDeadlineObservationCountsOncePerPeerAndRound(t *testing.T) {
	d := newDeadline(t, cfg())
	if !d.Observe(3, "a", t0, t0.Add(time.Second)) || d.Observe(3, "a", t0, t0.Add(50*time.Second)) {
		t.Fatal("second observation of peer a in round 3 was kept")
	}
	if !d.Observe(4, "a", t0, t0.Add(time.Second)) || d.Len() != 2 {
		t.Fatalf("peer a in round 4 not kept (len %d)", d.Len())
	}
}

// TestDeadlineWindowForgetsOldest: once full, each observation replaces the oldest, and a
// forgotten (round, peer) may be observed again.
func TestDeadlineWindowForgetsOldest(t *testing.T) {
	c := cfg()
	c.Window = 4
	d := newDeadline(t, c)
	for i := range 4 {
		d.Observe(0, fmt.Sprint(i), t0, t0.Add(50*time.Second))
	}
	for i := range 4 {
		d.Observe(1, fmt.Sprint(i), t0, t0.Add(5*time.Second))
	}
	if d.Len() != 4 || d.Current() != 5*time.Second {
		t.Fatalf("len %d, deadline %v: old observations still count", d.Len(), d.Current())
	}
	if !d.Observe(0, "0", t0, t0.Add(5*time.Second)) {
		t.Error("an observation that left the window was refused")
	}
}

func TestDeadlineClosable(t *testing.T) {
	d := newDeadline(t, cfg())
	observe(d, secs(5, 5, 5, 5)...) // adaptive deadline 5s
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	for _, c := range []struct {
		name            string
		now             time.Time
		received, total uint64
		all             bool
		want            bool
	}{
		{"quorum and all arrived, early", at(1), 100, 100, true, true},
		{"quorum, not all, before deadline", at(4), 70, 100, false, false},
		{"quorum, not all, at deadline", at(5), 67, 100, false, true},
		{"below quorum, after deadline", at(30), 66, 100, false, false},
		{"below quorum, all arrived", at(1), 50, 100, true, false},
		{"below quorum, at max", at(60), 0, 100, false, true},
		{"no stake at all", at(5), 0, 0, false, true},
		{"start in the future", at(-10), 100, 100, false, false},
	} {
		if got := d.Closable(c.now, t0, c.received, c.total, c.all); got != c.want {
			t.Errorf("%s: Closable = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestSilentPeerCannotHoldRoundPastMax: a peer holding most of the stake never arrives; the
// round closes exactly at Max, with or without observations.
func TestSilentPeerCannotHoldRoundPastMax(t *testing.T) {
	for _, n := range []int{0, 16} {
		d := newDeadline(t, cfg())
		observe(d, slices.Repeat(secs(1), n)...)
		received, total := uint64(10), uint64(100) // the silent peer holds 90
		if d.Closable(t0.Add(60*time.Second-1), t0, received, total, false) {
			t.Errorf("%d observations: closable below quorum before max", n)
		}
		if !d.Closable(t0.Add(60*time.Second), t0, received, total, false) {
			t.Errorf("%d observations: a silent peer held the round past max", n)
		}
	}
}

// TestSlowMinorityBoundedDeadline: however late a minority of the window arrives, the
// deadline stays at most max(honest) + K·(max − min of honest) and at most Max, and no
// lower than the smallest honest delay or Min.
func TestSlowMinorityBoundedDeadline(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	c := cfg()
	for range 500 {
		n := c.MinObservations + rng.IntN(c.Window-c.MinObservations+1)
		bad := rng.IntN((n + 1) / 2) // fewer than half
		honest := make([]time.Duration, n-bad)
		for i := range honest {
			honest[i] = time.Duration(3e9 + rng.Int64N(4e9)) // 3 to 7 s
		}
		d := newDeadline(t, c)
		observe(d, honest...)
		clean := d.Current()
		for range bad {
			observe(d, time.Duration(rng.Int64N(int64(time.Hour)))) // as late as it likes
		}
		lo, hi := slices.Min(honest), slices.Max(honest)
		upper := min(hi+time.Duration(c.K*float64(hi-lo)), c.Max)
		got := d.Current()
		if got > upper || got < max(lo, c.Min) {
			t.Fatalf("%d slow of %d: deadline %v outside [%v, %v] (honest only %v)", bad, n, got, max(lo, c.Min), upper, clean)
		}
	}
}

// TestDeadlineMatchesNaiveReference: the deadline equals clamp(median + K·MAD, Min, Max)
// computed naively over the last Window clamped delays, for random sequences.
func TestDeadlineMatchesNaiveReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for trial := range 300 {
		c := cfg()
		c.Window = 1 + rng.IntN(20)
		c.MinObservations = 1 + rng.IntN(c.Window)
		c.K = float64(rng.IntN(5))
		d := newDeadline(t, c)
		var all []time.Duration
		for i := range rng.IntN(60) {
			x := time.Duration(rng.Int64N(int64(90*time.Second))) - 10*time.Second
			d.Observe(uint64(i), "p", t0, t0.Add(x))
			all = append(all, min(max(x, 0), c.Max))
			if got, want := d.Current(), naiveDeadline(all, c); got != want {
				t.Fatalf("trial %d after %d observations: %v, naive %v", trial, len(all), got, want)
			}
		}
	}
}

func naiveDeadline(all []time.Duration, c DeadlineConfig) time.Duration {
	w := all[max(0, len(all)-c.Window):]
	if len(w) < c.MinObservations {
		return c.Max
	}
	med := naiveMedian(w)
	dev := make([]time.Duration, len(w))
	for i, x := range w {
		dev[i] = x - med
		if dev[i] < 0 {
			dev[i] = -dev[i]
		}
	}
	mad := naiveMedian(dev)
	v := med + time.Duration(c.K*float64(mad))
	return min(max(v, c.Min), c.Max)
}

// naiveMedian: the middle value, or the mean of the two middle values, by counting ranks.
func naiveMedian(xs []time.Duration) time.Duration {
	nth := func(k int) time.Duration { // the k-th smallest, 0-based
		for _, x := range xs {
			less, eq := 0, 0
			for _, y := range xs {
				if y < x {
					less++
				} else if y == x {
					eq++
				}
			}
			if less <= k && k < less+eq {
				return x
			}
		}
		panic("unreachable")
	}
	n := len(xs)
	lo, hi := nth((n-1)/2), nth(n/2)
	return lo + (hi-lo)/2
}
