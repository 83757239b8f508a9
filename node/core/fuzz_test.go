package core

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/lowband/lowband/incentives/incentivestest"
	"github.com/lowband/lowband/verify"
)

// FuzzShardAssembly feeds a core sequences of shards whose rounds, peers, indexes, counts
// and payloads come from the fuzzer (as a validator that passed anything would), then lets
// the round close. Nothing may panic, Shard may only refuse with ErrShard, and closing must
// never fail: whatever peers send, the record the core builds is well formed.
func FuzzShardAssembly(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 0, 1, 0, 0, 1, 0})
	f.Add([]byte{0, 0, 0, 2, 0, 0, 0, 1, 2, 1, 0, 0, 0, 2, 2})
	f.Add([]byte{1, 1, 0, 1, 1, 2, 0, 0, 0, 0})
	f.Fuzz(fuzzOne)
}

var fuzzPeers = []string{incentivestest.PeerID("p0"), incentivestest.PeerID("p1"), incentivestest.PeerID("p2")}

func fuzzOne(t *testing.T, data []byte) {
	peers := fuzzPeers
	c, own := tinyCore(t)
	now := capT0
	for len(data) >= 5 {
		b := data[:5]
		data = data[5:]
		sh := *own
		h := &sh.Header
		h.Peer, h.Round = peers[int(b[0])%len(peers)], uint64(b[1]%3)
		h.Index, h.Count = uint32(b[2]%4), uint32(b[3]%5)
		switch b[4] % 3 {
		case 1:
			sh.Payload = []byte(fmt.Sprint("junk", b[4]))
		case 2:
			sh.Payload = append([]byte{b[4]}, own.Payload...)
		}
		h.PayloadCID = verify.PayloadCID(sh.Payload)
		now = now.Add(time.Second)
		if _, err := c.Shard(now, &sh, nil); err != nil && !errors.Is(err, ErrShard) {
			t.Fatalf("shard %+v: %v", h, err)
		}
	}
	rd, err := c.LocalDone(now, 1, tinyTheta())
	if err != nil {
		t.Fatal(err)
	}
	if rd.Summary == nil {
		if rd, err = c.Tick(now.Add(time.Hour)); err != nil || rd.Summary == nil {
			t.Fatalf("round 0 did not close at the deadline: %v", err)
		}
	}
}
