package p2p_test

import (
	"context"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/p2p/p2ptest"
)

// An idle host (every advertised peer connected) looks for newcomers near the rendezvous
// key only: its own provider records and the few peers of its table nearest the key. Once
// the advertisements are on the nodes nearest the key, it finds every advertised host, as
// a whole lookup does, while asking a handful of DHT nodes where the whole lookup asks
// every node of a small swarm.
func TestNearLookFindsEveryoneFromAFewPeers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Every host seeks one connection, so none looks on its own while the test counts. The
	// host that looks is a DHT client: no peer puts a provider record on it, so what it
	// finds beyond itself comes from the peers it asks.
	s, err := p2ptest.Start(ctx, 8, func(i int, c *p2p.Config) {
		c.ConnLow, c.ConnHigh = 1, 16
		if i == 0 {
			c.DHTMode = p2p.DHTClient
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := s.Hosts[0]
	// A host's first advertisement, made while others were still joining, is on the
	// nodes that were nearest the key then; it advertises again once its table has grown
	// by half, and the near look finds it from then on.
	nearAll := func() bool {
		found, err := h.NearRendezvous(ctx)
		if err != nil {
			return false
		}
		ids := map[peer.ID]bool{}
		for _, ai := range found {
			ids[ai.ID] = true
		}
		for _, o := range s.Hosts {
			if !ids[o.ID()] {
				return false
			}
		}
		return true
	}
	if err := p2ptest.Poll(ctx, "every host advertised on the nodes nearest the key", 100*time.Millisecond, func() bool {
		return advertised(ctx, h, s.Hosts...) && nearAll()
	}); err != nil {
		t.Fatal(err)
	}
	served := func() int64 {
		var n int64
		for _, o := range s.All() {
			if o != h {
				n += o.DHTRequestsServed()
			}
		}
		return n
	}
	// What one look asks of the others: the least of three tries, as the swarm's own
	// advertisements and table refreshes may land in a try.
	asked := func(look func(context.Context) ([]peer.AddrInfo, error)) (int64, []peer.AddrInfo) {
		best, found := int64(-1), []peer.AddrInfo(nil)
		for range 3 {
			before := served()
			got, err := look(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if n := served() - before; best < 0 || n < best {
				best, found = n, got
			}
		}
		return best, found
	}
	whole, wholeFound := asked(h.LookupRendezvous)
	near, nearFound := asked(h.NearRendezvous)
	ids := map[peer.ID]bool{}
	for _, ai := range nearFound {
		ids[ai.ID] = true
	}
	for i, o := range s.Hosts {
		if !ids[o.ID()] {
			t.Fatalf("the near look missed host %d of %d (it found %d, the whole lookup %d)", i, len(s.Hosts), len(nearFound), len(wholeFound))
		}
	}
	if near > 3 || near >= whole {
		t.Fatalf("a near look asked %d DHT nodes, a whole lookup %d: want at most 3, and fewer", near, whole)
	}
	t.Logf("DHT requests: near look %d, whole lookup %d", near, whole)
}
