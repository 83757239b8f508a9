package doctor

import "errors"

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

// ClockSkew says what it cannot check: lowband's protocols (identify, the DHT, gossip)
// carry no peer's time, so skew against peers is not measured.
func ClockSkew() Result {
	return skip("clock skew", "not checked: no lowband protocol carries a peer's time; the clock check above is the local one")
}
