package doctor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/p2p"
)

// errUnsupported is what a system probe returns where the operating system gives no way.
var errUnsupported = errors.New("not supported on this operating system")

// Clock checks that the system clock is synchronised. Rounds are timed from the network
// spec's genesis time, so a node whose clock drifts works on the wrong round.
func Clock(synced func() (bool, error)) Result {
	const check = "clock"
	s, err := synced()
	switch {
	case errors.Is(err, errUnsupported):
		return skip(check, "not checked on this operating system")
	case err != nil:
		return warn(check, "cannot ask the kernel whether the clock is synchronised: "+err.Error(), "check the time service (timedatectl status)")
	case !s:
		return warn(check, "the kernel says the system clock is not synchronised",
			"run a time service (systemd-timesyncd or chrony): rounds are timed from the network's genesis time")
	}
	return ok(check, "the system clock is synchronised")
}

// skewWarn is the skew against the network beyond which doctor warns.
const skewWarn = 3 * time.Second

// ClockSkew measures this machine's clock against the bootstrap peers of the spec and
// config (self excluded), each within timeout, over p2p.TimeProtocol: the skew is the
// median of the peers' offsets, so one peer's wrong clock does not move it. Within
// skewWarn it is OK; beyond, a warning; beyond the round deadline's lower bound, where this
// node would work on rounds out of step with its peers, a failure. No peer answering
// skips the check.
func ClockSkew(ctx context.Context, c *configs.Config, s *configs.Spec, self peer.ID, pr Prober, timeout time.Duration) Result {
	const check = "clock skew"
	var offsets []time.Duration
	var rtt time.Duration
	for _, r := range clocks(ctx, c, s, self, pr, timeout) {
		if r.Err == nil {
			offsets, rtt = append(offsets, r.Offset), max(rtt, r.RTT)
		}
	}
	if len(offsets) == 0 {
		return skip(check, "not checked: no bootstrap peer answered with its time (peers of an older version do not)")
	}
	slices.Sort(offsets)
	skew := offsets[len(offsets)/2]
	way := "behind"
	if skew < 0 {
		way = "ahead of"
	}
	found := fmt.Sprintf("this clock is %s %s the median of %d peers (within %s)", skew.Abs().Round(time.Millisecond), way, len(offsets), (rtt / 2).Round(time.Millisecond))
	sync := "synchronise the clock: run a time service (systemd-timesyncd or chrony; timedatectl set-ntp true)"
	switch deadline := time.Duration(s.Round.DeadlineMin) * time.Second; {
	case skew.Abs() > deadline:
		return fail(check, found+fmt.Sprintf(": more than the round deadline's lower bound (%s), so this node works on rounds out of step with its peers", deadline), sync)
	case skew.Abs() > skewWarn:
		return warn(check, found, sync)
	}
	return ok(check, "%s", found)
}

// clocks asks each bootstrap peer (self excluded) its time, in parallel, each within
// timeout. Addresses that do not parse are left out: Bootstrap reports them.
func clocks(ctx context.Context, c *configs.Config, s *configs.Spec, self peer.ID, pr Prober, timeout time.Duration) []p2p.ClockResult {
	addrs := dedup(append(append([]string{}, s.Bootstrap...), c.P2P.Bootstrap...))
	out := make([]p2p.ClockResult, len(addrs))
	var wg sync.WaitGroup
	for i, a := range addrs {
		ai, err := peer.AddrInfoFromString(a)
		if err != nil || ai.ID == self {
			out[i].Err = errors.New("not asked")
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			pctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			out[i] = pr.Clock(pctx, *ai, p2p.TimeProtocol(s.NetworkID()))
		}()
	}
	wg.Wait()
	return out
}
