package configs

import (
	"errors"
	"path/filepath"
	"testing"
)

// TestProfilesGetThroughNAT: the public profile runs AutoNAT v2, the NAT service, hole
// punching and the relay client; the bootstrap profile AutoNAT v2, the NAT service and
// the relay service, and is public without waiting for AutoNAT; the local profile none of
// them.
func TestProfilesGetThroughNAT(t *testing.T) {
	want := map[string]NATConfig{
		ProfileLocal:     {},
		ProfilePublic:    {AutoNAT: true, NATService: true, HolePunching: true, RelayClient: true},
		ProfileBootstrap: {AutoNAT: true, NATService: true, RelayService: true, Reachability: "public"},
	}
	for p, w := range want {
		c, err := Default(p)
		if err != nil {
			t.Fatal(err)
		}
		w.RelayReservations, w.RelayCircuits = 128, 16
		if c.P2P.NATConfig != w {
			t.Errorf("profile %s: %+v, want %+v", p, c.P2P.NATConfig, w)
		}
	}
}

// TestNATKeysRoundTrip: the keys are in [p2p] and survive a write and a load.
func TestNATKeysRoundTrip(t *testing.T) {
	c, _ := Default(ProfileLocal)
	c.P2P.RelayService, c.P2P.RelayReservations, c.P2P.RelayCircuitSeconds, c.P2P.RelayCircuitBytes = true, 7, 60, 1<<20
	p := filepath.Join(t.TempDir(), "config.toml")
	if err := WriteConfig(p, c); err != nil {
		t.Fatal(err)
	}
	got, err := LoadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	if got.P2P.NATConfig != c.P2P.NATConfig {
		t.Errorf("round trip: %+v, want %+v", got.P2P.NATConfig, c.P2P.NATConfig)
	}
}

// TestNATKeysRefused: limits that make no sense name their key.
func TestNATKeysRefused(t *testing.T) {
	for key, mutate := range map[string]func(*NATConfig){
		"p2p.relay_reservations":    func(n *NATConfig) { n.RelayReservations = 0 },
		"p2p.relay_circuits":        func(n *NATConfig) { n.RelayCircuits = -1 },
		"p2p.relay_circuit_seconds": func(n *NATConfig) { n.RelayCircuitSeconds = 60 },
		"p2p.relay_circuit_bytes":   func(n *NATConfig) { n.RelayCircuitBytes = -1 },
	} {
		c, _ := Default(ProfileBootstrap)
		mutate(&c.P2P.NATConfig)
		var ke *KeyError
		if err := c.Validate(); !errors.As(err, &ke) || ke.Key != key {
			t.Errorf("%s: got %v", key, err)
		}
	}
}
