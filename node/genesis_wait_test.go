package node

import (
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/incentives"
)

// TestGenesisPeerThereByTopicOrRendezvous: round 0 waits for the genesis peers that are
// neither on the shards topic nor found advertised in the rendezvous, and for the node's
// own neighbours: at least D_lo genesis peers (all of them, when fewer) on the topic. Self
// never counts; the log line says whether an absent peer is connected.
func TestGenesisPeerThereByTopicOrRendezvous(t *testing.T) {
	ids := newPeerIDs(t, 9)
	var g incentives.Genesis
	for _, id := range ids {
		g.Stakes = append(g.Stakes, incentives.Stake{Peer: id.String(), Amount: 1000})
	}
	found := func(ps ...peer.ID) func(peer.ID) bool {
		return func(p peer.ID) bool { return slices.Contains(ps, p) }
	}
	self, others := ids[0], ids[1:]
	onTopic := others[:genesisTopicPeers]
	absent := absentOf(g, self, onTopic, []peer.ID{others[7]}, found(others[genesisTopicPeers:7]...))
	if len(absent) != 1 || !strings.HasPrefix(absent[0], others[7].ShortString()) || !strings.Contains(absent[0], "connected=true") {
		t.Fatalf("absent %v, want only %s, connected", absent, others[7].ShortString())
	}
	if absent = absentOf(g, self, onTopic, nil, found(others...)); len(absent) != 0 {
		t.Fatalf("D_lo on the topic, the others found advertised: absent %v, want none", absent)
	}
	if absent = absentOf(g, self, onTopic[1:], nil, found(others...)); len(absent) != 1 || !strings.Contains(absent[0], "1 of the 5") {
		t.Fatalf("every peer found but one too few on the topic: absent %v, want the topic short by 1 of %d", absent, genesisTopicPeers)
	}
	if absent = absentOf(g, self, nil, nil, found()); len(absent) != 9 {
		t.Fatalf("no topic peer, none found: absent %v, want the topic short and the 8 others (self never)", absent)
	}
	// Fewer genesis peers than D_lo: all of them on the topic, and nothing else wanted.
	small := incentives.Genesis{Stakes: g.Stakes[:3]}
	if absent = absentOf(small, self, ids[1:3], nil, found()); len(absent) != 0 {
		t.Fatalf("both other genesis peers on the topic: absent %v, want none", absent)
	}
	if absent = absentOf(small, self, ids[1:2], nil, found(ids[2])); len(absent) != 1 {
		t.Fatalf("of two other genesis peers one on the topic, one found: absent %v, want the topic short", absent)
	}
}

// TestNoneMajorityOfGenesis: a node at genesis knows no majority closed a round once the
// peers that answered they closed none carry more than half of the genesis power; exactly
// half is not enough, a peer named twice counts once, and a peer without stake not at all.
func TestNoneMajorityOfGenesis(t *testing.T) {
	ids := newPeerIDs(t, 6)
	led := stakeLedger(t, ids[:5], 1000, 1000, 1000, 1000, 4000) // 8000 in all
	outsider := ids[5]
	for _, c := range []struct {
		none []peer.ID
		want bool
	}{
		{[]peer.ID{ids[4], ids[0]}, true},                                    // 5000
		{[]peer.ID{ids[4]}, false},                                           // 4000: exactly half
		{[]peer.ID{ids[0], ids[1], ids[2], ids[3]}, false},                   // 4000
		{[]peer.ID{ids[4], ids[4], outsider}, false},                         // counted once; no stake
		{[]peer.ID{ids[0], ids[1], ids[2], ids[3], ids[3], outsider}, false}, // counted once
		{[]peer.ID{ids[4], ids[3], outsider}, true},
		{nil, false},
	} {
		if got := noneMajority(led, c.none); got != c.want {
			t.Errorf("answered none %v: %v, want %v", c.none, got, c.want)
		}
	}
}

// TestAskNotesPeersThatHoldNone: the peers that answer an ask that they hold no such
// object are noted (a node at genesis answers so for its last committed record); those
// that answer, refuse or do not answer are not.
func TestAskNotesPeersThatHoldNone(t *testing.T) {
	ids := newPeerIDs(t, 4)
	fake := &digestAnswering{asked: map[peer.ID][]byte{},
		digests: map[peer.ID][]byte{ids[0]: {1, 2, 3}, ids[1]: {}, ids[2]: nil},
		old:     map[peer.ID]bool{ids[3]: true}, // refuses the request
	}
	j := &joiner{
		n:     &Node{log: slog.New(slog.DiscardHandler)},
		fetch: &fetchClient{host: fake, proto: "fetch", maxShard: 1 << 20, timeout: time.Minute},
	}
	out, refused := j.askAll(t.Context(), ids, committedDigestRequest(headRound))
	if len(out) != 1 || out[ids[0]] == nil || !slices.Equal(refused, ids[3:]) {
		t.Fatalf("answers %v, refused %v; want one answer and the old build refusing", out, refused)
	}
	if len(j.notHeld) != 2 || !j.notHeld[ids[1]] || !j.notHeld[ids[2]] {
		t.Fatalf("noted as holding none: %v, want peers 1 and 2", j.notHeld)
	}
}
