package main

import "testing"

// TestRunAdversaryRefusedOnNetworkThatDoesNotAllowIt: `lowband run --adversary KIND`
// refuses to start on the devnet, whose spec allows no adversary, and says why; an unknown
// kind and a bootstrap node with an adversary are refused too.
func TestRunAdversaryRefusedOnNetworkThatDoesNotAllowIt(t *testing.T) {
	home := initHome(t, "local")
	wantError(t, "allow_adversaries", "run", "--home", home, "--adversary", "sign-flip")
	wantError(t, "unknown adversary kind", "run", "--home", home, "--adversary", "polite")
	wantError(t, "training node", "run", "--home", home, "--role", "bootstrap", "--adversary", "silent")
}
