package p2p_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/p2p/p2ptest"
)

// TestGateCutsAHostOffAndLetsItBack: a host behind a closed gate loses its connections
// and can neither dial nor be dialled; once the gate opens, Connect joins it again.
func TestGateCutsAHostOffAndLetsItBack(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	gate := &p2ptest.Gate{}
	s, err := p2ptest.Start(ctx, 2, func(i int, c *p2p.Config) {
		if i == 0 {
			c.Gater = gate
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cut, other := s.Hosts[0], s.Hosts[1]
	if err := cut.Connect(ctx, other.AddrInfo()); err != nil {
		t.Fatalf("connecting before the cut: %v", err)
	}
	gate.Cut(cut)
	if peers := cut.ConnectedPeers(); len(peers) != 0 {
		t.Fatalf("cut off, still connected to %v", peers)
	}
	if err := p2ptest.Poll(ctx, "the other host to see the connection closed", 10*time.Millisecond, func() bool {
		return !slices.Contains(other.ConnectedPeers(), cut.ID())
	}); err != nil {
		t.Fatal(err)
	}
	if err := cut.Connect(ctx, other.AddrInfo()); err == nil {
		t.Fatal("a cut host dialled out")
	}
	// A dial of the cut host may complete on the dialer's side before the cut host's gate
	// refuses the connection it secured; what must not happen is a connection that stays.
	if err := other.Connect(ctx, cut.AddrInfo()); err == nil {
		if err := p2ptest.Poll(ctx, "the dialled connection to the cut host closed", 10*time.Millisecond, func() bool {
			return !slices.Contains(other.ConnectedPeers(), cut.ID()) && len(cut.ConnectedPeers()) == 0
		}); err != nil {
			t.Fatal("a cut host was dialled and the connection stayed")
		}
	}
	gate.Restore()
	if err := cut.Connect(ctx, other.AddrInfo()); err != nil {
		t.Fatalf("connecting after the cut: %v", err)
	}
	if !slices.Contains(cut.ConnectedPeers(), other.ID()) {
		t.Fatal("not connected after the cut")
	}
}
