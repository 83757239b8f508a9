package node

import (
	"log/slog"
	"testing"

	"github.com/lowband/lowband/p2p/p2ptest"
)

// TestPublicOnlyFromConfigReachesTheHost: config.toml's p2p.public_only is what the
// libp2p host is started with.
func TestPublicOnlyFromConfigReachesTheHost(t *testing.T) {
	h, c, s := newHome(t)
	for _, want := range []bool{true, false} {
		c.P2P.PublicOnly = want
		n := &Node{opts: Options{Home: h, Config: c, Spec: s}, log: slog.New(slog.DiscardHandler)}
		pc, err := n.p2pConfig(p2ptest.Key(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if pc.PublicOnly != want {
			t.Errorf("p2p.public_only = %v: host config PublicOnly = %v", want, pc.PublicOnly)
		}
	}
}
