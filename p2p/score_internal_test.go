package p2p

import (
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"
)

// TestPeerExchangeOnlyFromPositiveScore: gossipsub takes peer exchange (the peers a
// PRUNE names) only from a peer whose score reaches AcceptPXThreshold. It must be
// positive, so a fresh peer (score 0) cannot steer the host to peers of its choosing,
// and the host's bootstrap peers, the ones that send peer exchange, must reach it.
func TestPeerExchangeOnlyFromPositiveScore(t *testing.T) {
	boot, err := peer.Decode("12D3KooWGRUVh6zGsDLTPHDA5ib1hLwrkdZLkb7H2zxEk2oHVqbU")
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := peer.Decode("12D3KooWPW6cQr6E1ZEbJdVwDfEwzY6FjhKJLPTUHKcfbgHQRKwn")
	if err != nil {
		t.Fatal(err)
	}
	h := &Host{cfg: Config{Bootstrap: []peer.AddrInfo{{ID: boot}}}}
	h.SetAppScore(func(peer.ID) float64 { return 0 })
	px := scoreThresholds.AcceptPXThreshold
	if px <= 0 {
		t.Fatalf("AcceptPXThreshold = %v: peer exchange accepted from a peer with score 0", px)
	}
	p := h.scoreParams()
	if s := p.AppSpecificScore(stranger) * p.AppSpecificWeight; s >= px {
		t.Errorf("a fresh peer scores %v, at or above AcceptPXThreshold %v", s, px)
	}
	if s := p.AppSpecificScore(boot) * p.AppSpecificWeight; s < px {
		t.Errorf("a bootstrap peer scores %v, below AcceptPXThreshold %v: its peer exchange is ignored", s, px)
	}
	h.SetAppScore(func(peer.ID) float64 { return -100 }) // jailed
	if s := p.AppSpecificScore(boot) * p.AppSpecificWeight; s >= px {
		t.Errorf("a jailed bootstrap peer scores %v, at or above AcceptPXThreshold %v", s, px)
	}
}
