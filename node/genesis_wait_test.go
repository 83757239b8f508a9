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

// TestGenesisWaitEndsOnAConnectedMajority: round 0 waits until the node has D_lo peers on
// the shards topic (or as many as the other genesis peers, when fewer), the genesis peers
// it is connected to or has on the topic carry with it more than half of the stake, and
// every other genesis peer is at least found advertised in the rendezvous (which is no
// proof: it stands only for a minority).
func TestGenesisWaitEndsOnAConnectedMajority(t *testing.T) {
	ids := newPeerIDs(t, 14)
	g9 := ids[:9]
	led := stakeLedger(t, g9, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000) // 9000
	var g incentives.Genesis
	for _, id := range g9 {
		g.Stakes = append(g.Stakes, incentives.Stake{Peer: id.String(), Amount: 1000})
	}
	found := func(ps ...peer.ID) func(peer.ID) bool {
		return func(p peer.ID) bool { return slices.Contains(ps, p) }
	}
	self, others, outsiders := ids[0], ids[1:9], ids[9:14]
	wait := func(topic, connected []peer.ID, f func(peer.ID) bool) ([]string, int) {
		return absentOf(g, led, self, topic, connected, f)
	}
	// Four others on the topic (any peers count: an outsider too), with self 5000 of 9000;
	// the other four found: no wait.
	topic := append(slices.Clone(others[:4]), outsiders[0])
	if absent, unfound := wait(topic, nil, found(others[4:]...)); len(absent) != 0 || unfound != 0 {
		t.Fatalf("a majority on the topic, the rest found: absent %v (%d unfound), want none", absent, unfound)
	}
	// Connected counts as there, like the topic.
	if absent, _ := wait(outsiders, others[:4], found(others[4:]...)); len(absent) != 0 {
		t.Fatalf("a majority connected, not on the topic, the rest found: absent %v, want none", absent)
	}
	// One other neither connected nor found: it is named, and counted for a lookup.
	absent, unfound := wait(topic, nil, found(others[4:7]...))
	if len(absent) != 1 || absent[0] != others[7].ShortString() || unfound != 1 {
		t.Fatalf("absent %v (%d unfound), want only %s", absent, unfound, others[7].ShortString())
	}
	// Every other found but a minority there: found is no proof, so the node waits.
	absent, unfound = wait(append(slices.Clone(others[:3]), outsiders[:2]...), nil, found(others...))
	if len(absent) != 1 || !strings.Contains(absent[0], "4000 of 9000") || unfound != 0 {
		t.Fatalf("every peer found, 4000 of 9000 there: absent %v (%d unfound), want the stake short", absent, unfound)
	}
	// A majority there and every other found, but the topic short of D_lo.
	absent, _ = wait(others[:genesisTopicPeers-1], others[:4], found(others...))
	if len(absent) != 1 || !strings.Contains(absent[0], "peers wanted on the shards topic") {
		t.Fatalf("topic short: absent %v, want the topic named", absent)
	}
	// Fewer other genesis peers than D_lo: all of them on the topic and nothing else.
	small := incentives.Genesis{Stakes: g.Stakes[:3]}
	led3 := stakeLedger(t, ids[:3], 1000, 1000, 1000)
	if absent, _ := absentOf(small, led3, self, ids[1:3], nil, found()); len(absent) != 0 {
		t.Fatalf("both other genesis peers on the topic: absent %v, want none", absent)
	}
	if absent, _ := absentOf(small, led3, self, ids[1:2], nil, found(ids[2])); len(absent) != 1 {
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

// TestGenesisWaitForPeersNotFoundIsBounded: once round 0 lacks only genesis peers not
// found (the topic and a connected majority are there), it waits for them deadline_min
// from when that began, not deadline_max: a node stuck behind a busy bootstrap peer held
// the round 0 of 99 others for 2 minutes. A shortfall of the topic or the stake starts the
// count again; nothing absent starts at once.
func TestGenesisWaitForPeersNotFoundIsBounded(t *testing.T) {
	t0 := time.Unix(1000, 0)
	const wait = 30 * time.Second
	if ready, since := quorumWait(nil, 0, time.Time{}, t0, wait); !ready || !since.IsZero() {
		t.Fatalf("nothing absent: ready %v since %v, want ready", ready, since)
	}
	short := []string{"2 of 5 peers wanted on the shards topic", "12*abc"}
	if ready, since := quorumWait(short, 1, t0.Add(-time.Hour), t0, wait); ready || !since.IsZero() {
		t.Fatalf("topic short: ready %v since %v, want a wait with no count", ready, since)
	}
	unfound := []string{"12*abc", "12*def"}
	ready, since := quorumWait(unfound, 2, time.Time{}, t0, wait)
	if ready || !since.Equal(t0) {
		t.Fatalf("only peers not found, first look: ready %v since %v, want the count started at %v", ready, since, t0)
	}
	if ready, s2 := quorumWait(unfound, 2, since, t0.Add(wait-time.Second), wait); ready || !s2.Equal(t0) {
		t.Fatalf("a second short of the wait: ready %v since %v", ready, s2)
	}
	if ready, _ := quorumWait(unfound[:1], 1, since, t0.Add(wait), wait); !ready {
		t.Fatal("only peers not found for the whole wait: still waiting")
	}
}
