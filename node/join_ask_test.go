package node

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/node/store"
	"github.com/lowband/lowband/verify"
)

// answering is a requester whose staked peers answer a committed-record request with
// their signed record and whose other peers stall until the ask gives up; it notes who
// was asked.
type answering struct {
	mu      sync.Mutex
	asked   []peer.ID
	records map[peer.ID][]byte
}

func (a *answering) Request(ctx context.Context, to peer.ID, _ string, _ []byte, _ int) ([]byte, error) {
	a.mu.Lock()
	a.asked = append(a.asked, to)
	data, ok := a.records[to]
	a.mu.Unlock()
	if !ok {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return data, nil
}

// TestCommittedAsksOnlyStakedPeers: a catch-up asks for committed records only the peers
// with voting power at genesis, so that a peer without any (whose record could weigh
// nothing) that never answers does not hold every ask up for joinAskWait. A genesis
// staker slashed to nothing by the node's own ledger is still asked: a rewind weighs the
// rounds before its slash by ledgers in which it votes, and without it two of four equal
// voters are no majority.
func TestCommittedAsksOnlyStakedPeers(t *testing.T) {
	const network, run = "net", "run"
	keys, ids := newKeys(t, 4)
	led := stakeLedger(t, ids[:3], 1000, 1000, 1000) // the genesis ledger: ids[3] holds no stake
	fake := &answering{records: map[peer.ID][]byte{}}
	for i := range 3 {
		rec := &incentives.Record{Version: incentives.RecordVersion, Round: 10,
			PrevRoot: bytes.Repeat([]byte{1}, 32), NewRoot: bytes.Repeat([]byte{2}, 32)}
		sr, err := incentives.SignCommitted(keys[i], network, run, rec)
		if err != nil {
			t.Fatal(err)
		}
		fake.records[ids[i]] = sr.Marshal()
	}
	j := &joiner{
		n:       &Node{log: slog.New(slog.DiscardHandler)},
		fetch:   &fetchClient{host: fake, proto: "fetch", maxShard: 1 << 20, timeout: time.Minute},
		rep:     &replayer{network: network, run: run},
		peers:   slices.Clone(ids),
		trust:   stakeLedger(t, ids[:2], 1000, 1000), // its own head: ids[2] slashed since genesis
		stakers: map[peer.ID]bool{ids[0]: true, ids[1]: true, ids[2]: true},
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*joinAskWait)
	defer cancel()
	heads := j.committed(ctx, 10)
	if len(heads) != 3 {
		t.Fatalf("%d committed records came, want the 3 genesis stakers'", len(heads))
	}
	if slices.Contains(fake.asked, ids[3]) {
		t.Fatal("the stakeless peer was asked for its committed record")
	}
	rec, signers, err := majorityOf(heads, led, 10)
	if err != nil || len(signers) != 3 || rec.NewRoot[0] != 2 {
		t.Fatalf("majority %v by %v (%v), want the record all three staked peers sent", rec, signers, err)
	}

	// Without the genesis stakers, every peer is asked (and the stalling one is waited for).
	fake.asked = nil
	j.stakers = nil
	short, cancelShort := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancelShort()
	if heads := j.committed(short, 10); len(heads) != 3 || !slices.Contains(fake.asked, ids[3]) {
		t.Fatalf("with no stakers: %d records, asked %v", len(heads), fake.asked)
	}
}

// newKeys returns n fresh identity keys and their peer IDs.
func newKeys(t *testing.T, n int) ([]crypto.PrivKey, []peer.ID) {
	t.Helper()
	var keys []crypto.PrivKey
	var ids []peer.ID
	for range n {
		k, _, err := crypto.GenerateEd25519Key(nil)
		if err != nil {
			t.Fatal(err)
		}
		id, _ := peer.IDFromPrivateKey(k)
		keys, ids = append(keys, k), append(ids, id)
	}
	return keys, ids
}

// digestAnswering answers fetchCommittedDigest from digests and the requests for whole
// committed records from whole; a peer in old refuses fetchCommittedDigest (a build from
// before it). It notes the kinds each peer was asked.
type digestAnswering struct {
	mu             sync.Mutex
	asked          map[peer.ID][]byte
	digests, whole map[peer.ID][]byte
	old            map[peer.ID]bool
}

func (a *digestAnswering) Request(_ context.Context, to peer.ID, _ string, req []byte, _ int) ([]byte, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked[to] = append(a.asked[to], req[0])
	if req[0] != fetchCommittedDigest {
		return a.whole[to], nil
	}
	if a.old[to] {
		return nil, errors.New("stream reset: unknown request kind")
	}
	return a.digests[to], nil
}

// headRecord is a record of the round for the head look's tests, its new root the round's
// number.
func headRecord(round uint64) *incentives.Record {
	return &incentives.Record{Version: incentives.RecordVersion, Round: round,
		PrevRoot: bytes.Repeat([]byte{1}, 32), NewRoot: bytes.Repeat([]byte{byte(round)}, 32)}
}

// TestHeadLookTakesSignedDigests: the head watch asks the voters for the digests of the
// records they committed (a vote for a round closed as usual, a committed record for a
// repaired one), each checked against its sender's signature under its version's domain,
// and asks again only the peers whose answer in hand is of another round; a peer that
// refuses the request (an older build) is asked for its whole record instead, taken by its
// digest, and on the next look for its whole record alone. A record named by peers
// carrying more than half of the voting power is the majority's.
func TestHeadLookTakesSignedDigests(t *testing.T) {
	const network, run = "net", "run"
	keys, ids := newKeys(t, 5)
	rec := headRecord
	committed := func(key int, round uint64) []byte {
		sr, err := incentives.SignCommitted(keys[key], network, run, rec(round))
		if err != nil {
			t.Fatal(err)
		}
		return sr.Marshal()
	}
	vote := func(key int, round uint64) []byte {
		sr, err := incentives.SignRecord(keys[key], network, run, rec(round))
		if err != nil {
			t.Fatal(err)
		}
		return sr.Marshal()
	}
	d10 := incentives.RecordDigest(rec(10).Marshal())
	fake := &digestAnswering{asked: map[peer.ID][]byte{},
		digests: map[peer.ID][]byte{
			ids[2]: digestOf(vote(2, 10)),      // a round closed as usual: its vote
			ids[3]: digestOf(committed(4, 10)), // signed by another key than the sender's
		},
		whole: map[peer.ID][]byte{ids[4]: committed(4, 10)},
		old:   map[peer.ID]bool{ids[4]: true},
	}
	if len(fake.digests[ids[2]]) != digestCommittedLen {
		t.Fatalf("a digest answer of %d bytes, want %d", len(fake.digests[ids[2]]), digestCommittedLen)
	}
	j := &joiner{
		n:     &Node{log: slog.New(slog.DiscardHandler)},
		fetch: &fetchClient{host: fake, proto: "fetch", maxShard: 1 << 20, timeout: time.Minute},
		rep:   &replayer{network: network, run: run},
		peers: slices.Clone(ids),
	}
	// Peers 0 and 1 closed round 10 last, peer 2 round 11: the answers in hand.
	have := []headRef{{from: ids[0], round: 10, digest: d10}, {from: ids[1], round: 10, digest: d10}, {from: ids[2], round: 11}}
	ctx, cancel := context.WithTimeout(t.Context(), 2*joinAskWait)
	defer cancel()
	got := j.headRefs(ctx, 10, have)
	if len(fake.asked[ids[0]])+len(fake.asked[ids[1]]) != 0 {
		t.Fatalf("peers whose round-10 answer was in hand were asked again: %v", fake.asked)
	}
	if k := fake.asked[ids[4]]; len(k) != 2 || k[0] != fetchCommittedDigest || k[1] == fetchCommittedDigest {
		t.Fatalf("the older build was asked %v, want the digest, then its whole record", k)
	}
	var from []peer.ID
	for _, h := range got {
		if h.round != 10 || h.digest != d10 {
			t.Fatalf("%v: round %d digest %x, want round 10's record", h.from, h.round, h.digest[:4])
		}
		from = append(from, h.from)
	}
	want := []peer.ID{ids[0], ids[1], ids[2], ids[4]}
	slices.Sort(want)
	if !slices.Equal(from, want) {
		t.Fatalf("answers from %v, want %v (not the forged one, sorted)", from, want)
	}
	if !slices.Equal(j.peers, ids) {
		t.Fatal("the joiner's peers changed")
	}
	clear(fake.asked)
	if again := j.headRefs(ctx, 10, have); len(again) != len(got) {
		t.Fatalf("a second look: %d answers, want %d", len(again), len(got))
	}
	if k := fake.asked[ids[4]]; len(k) != 1 || k[0] == fetchCommittedDigest {
		t.Fatalf("on the second look the older build was asked %v, want its whole record alone", k)
	}
	led := stakeLedger(t, ids, 1000, 1000, 1000, 1000, 1000)
	if !sameAsMost(got, d10, led) {
		t.Fatal("four of five equal voters naming one record are not its majority")
	}
	if sameAsMost(got[:2], d10, led) || sameAsMost(got, incentives.RecordDigest(rec(11).Marshal()), led) {
		t.Fatal("a minority, or a record nobody named, taken as the majority's")
	}
	four := stakeLedger(t, ids[:4], 1000, 1000, 1000, 1000)
	naming := func(ps ...int) []headRef {
		var out []headRef
		for _, i := range ps {
			out = append(out, headRef{from: ids[i], round: 10, digest: d10})
		}
		return out
	}
	if sameAsMost(naming(0, 1), d10, four) || !sameAsMost(naming(0, 1, 2), d10, four) {
		t.Fatal("exactly half of the power taken as a majority, or three quarters not")
	}
	if sameAsMost(naming(0, 1, 0, 1), d10, four) || sameAsMost(naming(0, 1, 4), d10, four) {
		t.Fatal("a peer counted twice, or a peer without power counted")
	}
	// Forged or malformed answers are refused before anything is taken from them.
	asCommitted := slices.Clone(fake.digests[ids[2]]) // a vote's signature under the committed domain
	asCommitted[1] = incentives.CommittedRecordVersion
	for _, bad := range [][]byte{nil, fake.digests[ids[2]][:digestCommittedLen-1], fake.digests[ids[3]], asCommitted} {
		for _, from := range ids[2:4] {
			if _, err := parseDigestAnswer(bad, network, run, from); err == nil {
				t.Fatalf("answer %x from %v taken", bad, from)
			}
		}
	}
	if h, err := parseDigestAnswer(digestOf(committed(2, 10)), network, run, ids[2]); err != nil || h.digest != d10 || h.round != 10 {
		t.Fatalf("a repaired round's committed record: %+v, %v", h, err)
	}
	if _, err := parseDigestAnswer(fake.digests[ids[2]], network, "other-run", ids[2]); err == nil {
		t.Fatal("a digest signed for another run taken")
	}
}

// TestHeadLookAsksAMajorityFirst: a node that knows its own record of its head round asks
// first the fewest voters that could carry a majority, and the others only when those do
// not all name that record at that round; what it takes decides the look as all the
// answers would.
func TestHeadLookAsksAMajorityFirst(t *testing.T) {
	const network, run = "net", "run"
	keys, ids := newKeys(t, 7)
	led := stakeLedger(t, ids, 1000, 1000, 1000, 1000, 1000, 1000, 1000)
	rec := headRecord
	vote := func(key int, round uint64) []byte {
		sr, err := incentives.SignRecord(keys[key], network, run, rec(round))
		if err != nil {
			t.Fatal(err)
		}
		return digestOf(sr.Marshal())
	}
	d10 := incentives.RecordDigest(rec(10).Marshal())
	look := func(own *[32]byte, round func(i int) uint64) (map[peer.ID][]byte, []headRef) {
		fake := &digestAnswering{asked: map[peer.ID][]byte{}, digests: map[peer.ID][]byte{}}
		for i, id := range ids {
			fake.digests[id] = vote(i, round(i))
		}
		j := &joiner{
			n:     &Node{log: slog.New(slog.DiscardHandler)},
			fetch: &fetchClient{host: fake, proto: "fetch", maxShard: 1 << 20, timeout: time.Minute},
			rep:   &replayer{network: network, run: run},
			peers: slices.Clone(ids),
		}
		ctx, cancel := context.WithTimeout(t.Context(), 2*joinAskWait)
		defer cancel()
		heads := j.lookHeads(ctx, led, 10, own)
		if !slices.Equal(j.peers, ids) {
			t.Fatal("the joiner's peers changed")
		}
		return fake.asked, heads
	}
	decided := func(heads []headRef) bool {
		h, ok := headOfPower(heads, led)
		return ok && h == 10 && sameAsMost(refsAt(heads, 10), d10, led)
	}
	// All at round 10 with the node's record: four of seven equal voters decide it.
	asked, heads := look(&d10, func(int) uint64 { return 10 })
	if len(asked) != 4 || len(heads) != 4 || !decided(heads) {
		t.Fatalf("%d peers asked, %d answers (decided: %v); want the first 4 of 7, deciding the look", len(asked), len(heads), decided(heads))
	}
	for _, id := range ids[:4] {
		if len(asked[id]) != 1 {
			t.Fatalf("peer %v asked %d times, want once (the first four by power)", id, len(asked[id]))
		}
	}
	// Peers 3 to 5 a round ahead (one of the first four): the others are asked too, each
	// once, and all the answers decide it.
	asked, heads = look(&d10, func(i int) uint64 { return 10 + uint64(min(1, i/3%2)) })
	if len(asked) != 7 || len(heads) != 7 || !decided(heads) {
		t.Fatalf("one of the first four ahead: %d asked, %d answers (decided: %v); want all 7, deciding the look", len(asked), len(heads), decided(heads))
	}
	for id, kinds := range asked {
		if len(kinds) != 1 {
			t.Fatalf("peer %v asked %d times in one look", id, len(kinds))
		}
	}
	// A node without its own record of the round asks everyone at once.
	if asked, heads = look(nil, func(int) uint64 { return 10 }); len(asked) != 7 || len(heads) != 7 {
		t.Fatalf("without the node's own record: %d asked, %d answers; want all 7", len(asked), len(heads))
	}
	// A majority of the first four at round 10 with another record is not the node's.
	other := incentives.RecordDigest(rec(11).Marshal())
	if asked, _ = look(&other, func(int) uint64 { return 10 }); len(asked) != 7 {
		t.Fatalf("the first four naming another record: %d asked, want all 7", len(asked))
	}
}

// TestReplayRefusesARecordThatDoesNotFollowBeforeFetching: a record whose previous root
// is not the head of the state reached, or of another round, is refused before any of its
// shards is asked for.
func TestReplayRefusesARecordThatDoesNotFollowBeforeFetching(t *testing.T) {
	ids := newPeerIDs(t, 2)
	led := stakeLedger(t, ids, 1000, 1000)
	fake := &answering{records: map[peer.ID][]byte{}}
	st, err := store.Open(filepath.Join(t.TempDir(), "store.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	j := &joiner{
		n:     &Node{log: slog.New(slog.DiscardHandler), ledger: &ledger{st: st}},
		fetch: &fetchClient{host: fake, proto: "fetch", maxShard: 1 << 20, timeout: time.Minute},
		rep:   &replayer{network: "net", run: "run"},
		peers: slices.Clone(ids),
		trust: led,
	}
	for _, c := range []struct {
		name  string
		round uint64
		prev  []byte
	}{
		{"another previous root", 0, bytes.Repeat([]byte{9}, 32)},
		{"another round", 1, led.Head},
	} {
		out := &joined{ledger: led}
		rec := &incentives.Record{Version: incentives.RecordVersion, Round: c.round, PrevRoot: c.prev, NewRoot: bytes.Repeat([]byte{2}, 32),
			Contributions: []incentives.Contribution{{Peer: ids[0].String(), Shards: [][]byte{{1, 2, 3}}}}}
		err := j.replay(t.Context(), out, rec, ids)
		var re *ReplayError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), "follows") {
			t.Fatalf("%s: %v, want a ReplayError naming what it follows", c.name, err)
		}
		if len(fake.asked) != 0 {
			t.Fatalf("%s: shards asked of %v for a record that does not follow", c.name, fake.asked)
		}
	}
}

// TestReplayShardMustBeOfTheNetworkAndCount: a peer serving a replay the right payload
// under a header of another network or run, or of another shard count than the record
// lists, is passed over for the next peer, whose shard is taken.
func TestReplayShardMustBeOfTheNetworkAndCount(t *testing.T) {
	ids := newPeerIDs(t, 5)
	owner := ids[0].String()
	_, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	payload := []byte("a compressed pseudo-gradient")
	shard := func(network, run string, count uint32) []byte {
		s, err := verify.SignShard(key, verify.ShardHeader{Network: network, Run: run, Round: 7, Peer: owner,
			Index: 0, Count: count, BundleHash: make([]byte, 32)}, payload)
		if err != nil {
			t.Fatal(err)
		}
		data, err := s.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	fake := &answering{records: map[peer.ID][]byte{
		ids[1]: shard("net", "run", 2),   // one of two: the record lists one
		ids[2]: shard("other", "run", 1), // another network's
		ids[3]: shard("net", "run-2", 1), // another run's
		ids[4]: shard("net", "run", 1),
	}}
	j := &joiner{
		n:     &Node{log: slog.New(slog.DiscardHandler)},
		fetch: &fetchClient{host: fake, proto: "fetch", maxShard: 1 << 20, timeout: time.Minute},
		rep:   &replayer{network: "net", run: "run", maxPayload: 1 << 20},
	}
	got, err := j.shard(t.Context(), 7, owner, 1, verify.PayloadCID(payload), nil, ids[1:])
	if err != nil || !bytes.Equal(got.Data, fake.records[ids[4]]) {
		t.Fatalf("took %d bytes (%v), want the shard of the last peer, the only one of this network, run and count", len(got.Data), err)
	}
	if len(fake.asked) != 4 {
		t.Fatalf("asked %d peers, want 4", len(fake.asked))
	}
}

// kindAnswering serves committed records as builds of this version do (fetchCommittedSame
// answered in short when the digest is the record's), except for the peers in old, which
// refuse that request as a build from before it does; it notes the kinds each peer was asked.
type kindAnswering struct {
	mu      sync.Mutex
	asked   map[peer.ID][]byte
	records map[peer.ID][]byte
	old     map[peer.ID]bool
	down    map[peer.ID]bool // refuse every request (restarting, rate limiting)
}

func (a *kindAnswering) Request(_ context.Context, to peer.ID, _ string, req []byte, _ int) ([]byte, error) {
	r, err := parseFetchRequest(req)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked[to] = append(a.asked[to], r.kind)
	switch {
	case a.down[to]:
		return nil, errors.New("stream reset")
	case r.kind == fetchCommittedSame && a.old[to]:
		return nil, errors.New("stream reset")
	case r.kind == fetchCommittedSame:
		return shortIfSame(a.records[to], r.hash), nil
	}
	return a.records[to], nil
}

// TestCommittedAsksWithItsOwnRecordsDigest: a node that committed the round asks with its
// record's digest; the peers that committed the same record answer with their signature
// alone and their records are rebuilt whole and checked; a peer whose record differs
// answers with it whole; a peer that refuses the request (a build from before it) is asked
// in plain at once, and in plain only from then on.
func TestCommittedAsksWithItsOwnRecordsDigest(t *testing.T) {
	const network, run = "net", "run"
	keys, ids := map[int]crypto.PrivKey{}, make([]peer.ID, 4)
	for i := range ids {
		k, _, err := crypto.GenerateEd25519Key(nil)
		if err != nil {
			t.Fatal(err)
		}
		keys[i] = k
		ids[i], _ = peer.IDFromPrivateKey(k)
	}
	record := func(newRoot byte) *incentives.Record {
		return &incentives.Record{Version: incentives.RecordVersion, Round: 10,
			PrevRoot: bytes.Repeat([]byte{1}, 32), NewRoot: bytes.Repeat([]byte{newRoot}, 32)}
	}
	sign := func(i int, rec *incentives.Record) []byte {
		sr, err := incentives.SignRecord(keys[i], network, run, rec)
		if err != nil {
			t.Fatal(err)
		}
		return sr.Marshal()
	}
	// ids[0] is this node; ids[1] agrees, ids[2] agrees on an old build, ids[3] differs.
	fake := &kindAnswering{asked: map[peer.ID][]byte{}, old: map[peer.ID]bool{ids[2]: true}, records: map[peer.ID][]byte{
		ids[1]: sign(1, record(2)), ids[2]: sign(2, record(2)), ids[3]: sign(3, record(3)),
	}}
	j := &joiner{
		n:     &Node{log: slog.New(slog.DiscardHandler)},
		fetch: &fetchClient{host: fake, proto: "fetch", maxShard: 1 << 20, timeout: time.Minute},
		rep:   &replayer{network: network, run: run},
		peers: slices.Clone(ids[1:]),
		own:   heldRounds{signed: sign(0, record(2))},
	}
	for look := range 2 {
		fake.asked = map[peer.ID][]byte{}
		heads := j.committed(t.Context(), 10)
		if len(heads) != 3 {
			t.Fatalf("look %d: %d committed records, want 3", look, len(heads))
		}
		for _, h := range heads {
			i := slices.Index(ids, h.from)
			if !bytes.Equal(h.data, fake.records[h.from]) {
				t.Fatalf("look %d: peer %d's record is not the one it signed", look, i)
			}
		}
		wantOld := []byte{fetchCommittedSame, fetchCommitted}
		if look > 0 {
			wantOld = []byte{fetchCommitted}
		}
		if got := fake.asked[ids[2]]; !bytes.Equal(got, wantOld) {
			t.Fatalf("look %d: the old build was asked kinds %v, want %v", look, got, wantOld)
		}
		for _, p := range []peer.ID{ids[1], ids[3]} {
			if got := fake.asked[p]; !bytes.Equal(got, []byte{fetchCommittedSame}) {
				t.Fatalf("look %d: a peer of this build was asked kinds %v", look, got)
			}
		}
	}
	if got := j.bytes.Load(); got > int64(2*(len(fake.records[ids[2]])+len(fake.records[ids[3]])+shortCommittedLen)) {
		t.Fatalf("%d bytes came in two looks: the agreeing peer's answers were not short", got)
	}
	// A peer that refuses both requests (restarting, or out of budget) is not taken for an
	// old build: the next look asks it with the digest again.
	fake.down = map[peer.ID]bool{ids[3]: true}
	j.committed(t.Context(), 10)
	if _, ok := j.n.plainCommitted.Load(ids[3]); ok {
		t.Fatal("a peer that refused both requests is asked in plain from then on")
	}
}
