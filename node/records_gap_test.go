package node

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/incentives/incentivestest"
	"github.com/lowband/lowband/p2p"
)

// gapPeers answers record fetches as each peer behaves: stalls (until the request's
// deadline), garbage (bytes that are not a record) or serves alice's records. It counts
// the requests each peer got.
type gapPeers struct {
	stall, garbage peer.ID
	records        map[uint64][]byte
	mu             sync.Mutex
	asked          map[peer.ID]int
}

func (g *gapPeers) Request(ctx context.Context, to peer.ID, _ string, req []byte, _ int) ([]byte, error) {
	r, err := parseFetchRequest(req)
	if err != nil || r.kind != fetchSignedRecord {
		return nil, err
	}
	g.mu.Lock()
	g.asked[to]++
	g.mu.Unlock()
	switch to {
	case g.stall:
		<-ctx.Done()
		return nil, ctx.Err()
	case g.garbage:
		return []byte("not a record at all"), nil
	}
	return g.records[r.slot.round], nil
}

// TestGapFetchAsksOthersWhenTheForwarderStallsOrLies: the neighbour that forwarded a
// record of round 10 stalls when asked for the signer's records of rounds 7 to 9, and the
// next peer asked sends garbage; the node asks others after each failure, and the rounds
// an honest peer serves reach the loop. Each peer is asked each round at most once.
func TestGapFetchAsksOthersWhenTheForwarderStallsOrLies(t *testing.T) {
	fx := incentivestest.New("net-a", "run-a")
	liar, _ := peer.Decode(incentivestest.PeerID("liar"))
	honest, _ := peer.Decode(incentivestest.PeerID("honest"))
	g := &gapPeers{stall: neighbor, garbage: liar, asked: map[peer.ID]int{}, records: map[uint64][]byte{
		8: signedRecordBytes(t, fx, "alice", 8, 0),
		9: signedRecordBytes(t, fx, "alice", 9, 0),
	}}
	ft := newRecordTest(t, 16, func(c *fullConfig) {
		c.Fetch = &fetchClient{host: g, maxShard: c.Wire.shardCap(), timeout: 200 * time.Millisecond}
		c.Peers = func() []peer.ID { return []peer.ID{neighbor, liar, honest} }
	})
	if r := ft.validate(p2p.KindRecords, signedRecordBytes(t, fx, "alice", 10, 0)); r != p2p.Accept {
		t.Fatalf("round 10: %v", r)
	}
	ft.f.wg.Wait()
	got := map[uint64]bool{}
	for len(ft.inbox) > 0 {
		got[(<-ft.inbox).(recordIn).rec.Round] = true
	}
	if !got[8] || !got[9] {
		t.Fatalf("rounds that reached the loop: %v, want 8 and 9 from the honest peer", got)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for p, n := range g.asked {
		if n > 3 {
			t.Errorf("peer %s asked %d times for 3 rounds", p.ShortString(), n)
		}
	}
}
