package node

import (
	"bytes"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
)

// TestHeadWatchTakesVotesNotCommittedRecords: a look at the peers' heads brings alice's
// committed record of round 10, which a repair made other than the vote she published
// for it (a node signs what it holds after a repair, for an audit). The head watch asks
// alice for her vote and the loop gets that vote, never the committed record: taken as a
// vote it would read as alice voting twice, dropping her vote and framing her for record
// equivocation.
func TestHeadWatchTakesVotesNotCommittedRecords(t *testing.T) {
	fx := incentivestest.New("net-a", "run-a")
	alice, _ := peer.Decode(incentivestest.PeerID("alice"))
	vote := signedRecordBytes(t, fx, "alice", 10, 0)
	committed := signedRecordBytes(t, fx, "alice", 10, 1)
	g := &gapPeers{asked: map[peer.ID]int{}, records: map[uint64][]byte{10: vote}}
	ft := newRecordTest(t, 16, func(c *fullConfig) {
		c.Fetch = &fetchClient{host: g, maxShard: c.Wire.shardCap(), timeout: 200 * time.Millisecond}
		c.Peers = func() []peer.ID { return []peer.ID{alice} }
	})
	_, rec, err := incentives.DecodeSignedRecord(committed)
	if err != nil {
		t.Fatal(err)
	}
	ft.f.askVotes(refsOf([]peerHead{{from: alice, rec: rec, data: committed}}))
	ft.f.wg.Wait()
	var got [][]byte
	for len(ft.inbox) > 0 {
		in := (<-ft.inbox).(recordIn)
		got = append(got, in.rec.Marshal())
	}
	_, want, err := incentives.DecodeSignedRecord(vote)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !bytes.Equal(got[0], want.Marshal()) {
		t.Fatalf("the loop got %d records (the vote: %v); want alice's vote alone", len(got), len(got) == 1 && bytes.Equal(got[0], want.Marshal()))
	}
}
