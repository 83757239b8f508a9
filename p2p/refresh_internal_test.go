package p2p

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	dht "github.com/libp2p/go-libp2p-kad-dht"
	dhtpb "github.com/libp2p/go-libp2p-kad-dht/pb"
	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"
)

// The routing table is refreshed once it holds a peer, then every ten minutes, every
// minute while it is thin, and after a failure on a growing retry.
func TestRefreshSchedule(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	var s refreshSchedule
	if s.due(t0, 0) {
		t.Fatal("due with an empty table: a lookup has no one to ask")
	}
	if !s.due(t0, 1) {
		t.Fatal("not due on the first peer")
	}
	s.done(t0, errors.New("lookup failed"), false)
	if s.joined {
		t.Fatal("joined after a failed refresh")
	}
	if s.due(t0.Add(tableRetryFirst-time.Millisecond), 50) || !s.due(t0.Add(tableRetryFirst), 50) {
		t.Fatal("a failed refresh is retried after tableRetryFirst")
	}
	t1 := t0.Add(tableRetryFirst)
	s.done(t1, errors.New("again"), false)
	if s.due(t1.Add(2*tableRetryFirst-time.Millisecond), 50) || !s.due(t1.Add(2*tableRetryFirst), 50) {
		t.Fatal("the retry doubles")
	}
	for range 20 {
		s.done(t1, errors.New("again"), false)
	}
	if s.retry != tableRefreshEvery {
		t.Fatalf("retry grew to %v, want at most %v", s.retry, tableRefreshEvery)
	}
	t2 := t1.Add(time.Hour)
	s.done(t2, nil, false)
	if !s.joined || s.retry != 0 {
		t.Fatalf("after a success: joined %v, retry %v", s.joined, s.retry)
	}
	if s.due(t2.Add(tableRefreshEvery-time.Second), tableLow+1) || !s.due(t2.Add(tableRefreshEvery), tableLow+1) {
		t.Fatal("a healthy table is refreshed every tableRefreshEvery")
	}
	if s.due(t2.Add(tableLowEvery-time.Second), tableLow) || !s.due(t2.Add(tableLowEvery), tableLow) {
		t.Fatal("a thin table is refreshed every tableLowEvery")
	}
}

// A full refresh that leaves the table's peers as they were doubles the period before
// the next, up to tableRefreshMax; one that changes them, or a failure, sets it back.
func TestQuietRefreshesBackOff(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	var s refreshSchedule
	s.done(t0, nil, true) // the join
	want := tableRefreshEvery
	for i := range 6 {
		now := t0.Add(time.Duration(i) * 24 * time.Hour)
		s.done(now, nil, false)
		want = min(2*want, tableRefreshMax)
		if s.due(now.Add(want-time.Second), tableLow+1) || !s.due(now.Add(want), tableLow+1) {
			t.Fatalf("after %d quiet refreshes: due at %v, want %v", i+1, s.period(), want)
		}
		if !s.due(now.Add(tableLowEvery), tableLow) {
			t.Fatal("a thin table is refreshed every tableLowEvery, quiet or not")
		}
	}
	if want != tableRefreshMax || tableRefreshMax <= tableRefreshEvery {
		t.Fatalf("the period grew to %v, want tableRefreshMax %v", want, tableRefreshMax)
	}
	s.done(t0, nil, true)
	if s.period() != tableRefreshEvery {
		t.Fatalf("after a refresh that changed the table: period %v, want %v", s.period(), tableRefreshEvery)
	}
	s.done(t0, nil, false)
	s.done(t0, errors.New("lookup failed"), false)
	s.done(t0, nil, false) // a quiet success after a failure
	if s.period() != 2*tableRefreshEvery {
		t.Fatalf("a failure in between: period %v, want %v (the count starts again)", s.period(), 2*tableRefreshEvery)
	}
}

// A host whose own addresses change looks its own key up again, so that its closest
// peers connect to it and learn the new addresses (kad-dht's auto refresh did so, and
// it is off). The bootstrap counts the lookups of the host's key it answers.
func TestAddressChangeLooksUpOwnKey(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var (
		mu  sync.Mutex
		own = map[peer.ID]int{} // lookups of a peer's own key, by that peer
	)
	boot := findNodeBoot(ctx, t, func(from peer.ID, key []byte) {
		mu.Lock()
		defer mu.Unlock()
		if string(key) == string(from) {
			own[from]++
		}
	})
	h := startHost(ctx, t, func(c *Config) {
		c.Bootstrap = []peer.AddrInfo{{ID: boot.ID(), Addrs: boot.Addrs()}}
		c.ConnLow, c.ConnHigh = 1, 8 // no rendezvous lookups
	})
	lookups := func() int {
		mu.Lock()
		defer mu.Unlock()
		return own[h.ID()]
	}
	wait := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			if ctx.Err() != nil {
				t.Fatalf("waiting for %s: %d lookups of the host's own key", what, lookups())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	wait("the join", func() bool { return lookups() >= 1 })
	time.Sleep(2 * tableCheckEvery)
	if n := lookups(); n != 1 {
		t.Fatalf("%d lookups of the host's own key with its addresses unchanged, want 1", n)
	}
	em, err := h.h.EventBus().Emitter(new(event.EvtLocalAddressesUpdated))
	if err != nil {
		t.Fatal(err)
	}
	defer em.Close()
	if err := em.Emit(event.EvtLocalAddressesUpdated{Diffs: true}); err != nil {
		t.Fatal(err)
	}
	wait("a lookup after the addresses changed", func() bool { return lookups() >= 2 })
}

// A full refresh of a table holding fewer than K peers is one lookup of the host's own key
// when that lookup ends with fewer than K peers: it asked every DHT node in reach, and the
// buckets' lookups, one each, could find no one more. The bootstrap counts the lookups the
// host sends it, of its own key and of others.
func TestFullRefreshOfASmallSwarmIsOneLookup(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var (
		mu          sync.Mutex
		own, others int // lookups by the host: of its own key, of other keys
		self        peer.ID
	)
	rendezvous, err := multihash.Sum([]byte(Rendezvous("test-0000", "run-0")), multihash.SHA2_256, -1)
	if err != nil {
		t.Fatal(err)
	}
	boot := findNodeBoot(ctx, t, func(from peer.ID, key []byte) {
		mu.Lock()
		defer mu.Unlock()
		if from != self {
			return
		}
		switch string(key) {
		case string(self):
			own++
		case string(rendezvous): // an advertisement, not a bucket's lookup
		default:
			others++
		}
	})
	cfg := func(c *Config) {
		c.Bootstrap = []peer.AddrInfo{{ID: boot.ID(), Addrs: boot.Addrs()}}
		c.ConnLow, c.ConnHigh = 1, 8 // no rendezvous lookups
		c.DHTMode = DHTServer
	}
	for range 3 {
		startHost(ctx, t, cfg)
	}
	keyOf := make(chan peer.ID, 1)
	h := startHost(ctx, t, func(c *Config) {
		cfg(c)
		id, err := peer.IDFromPrivateKey(c.Identity)
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		self = id
		mu.Unlock()
		keyOf <- id
	})
	<-keyOf
	counts := func() (int, int) {
		mu.Lock()
		defer mu.Unlock()
		return own, others
	}
	for o, _ := counts(); o == 0 || h.RoutingTableSize() < 2; o, _ = counts() {
		if ctx.Err() != nil {
			t.Fatalf("no join: %d lookups of the host's own key, a table of %d", o, h.RoutingTableSize())
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(2 * tableCheckEvery) // the loop's own lookups are over
	own0, others0 := counts()
	if err := h.refresh(true); err != nil {
		t.Fatal(err)
	}
	// The host's loop may look its own key up meanwhile (its addresses changed): the
	// buckets' lookups, of other keys, are what a census spares.
	if o, x := counts(); o-own0 < 1 || x != others0 {
		t.Fatalf("a full refresh of a table of %d sent the bootstrap %d lookups of the host's own key and %d of others, want at least 1 and 0", h.RoutingTableSize(), o-own0, x-others0)
	}
}

// findNodeBoot starts a DHT server of the test network, closed with the test, that calls
// found with the sender and key of every lookup (FIND_NODE) it answers.
func findNodeBoot(ctx context.Context, t *testing.T, found func(from peer.ID, key []byte)) host.Host {
	t.Helper()
	boot, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = boot.Close() })
	d, err := dht.New(ctx, boot, dht.ProtocolPrefix(DHTPrefix("test-0000")), dht.Mode(dht.ModeServer),
		dht.OnRequestHook(func(_ context.Context, s network.Stream, m *dhtpb.Message) {
			if m.GetType() == dhtpb.Message_FIND_NODE {
				found(s.Conn().RemotePeer(), m.GetKey())
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return boot
}
