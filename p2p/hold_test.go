package p2p_test

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/p2p/p2ptest"
)

// heldSwarm runs a swarm of 7 hosts on the in-memory network, every link 20 ms one way,
// with the given ForwardHold, publishes msgs messages of size bytes on the shards topic
// (from the hosts in turn) and returns the duplicates the hosts received and the shortest
// time a message took to reach a subscriber other than its publisher.
func heldSwarm(t *testing.T, hold time.Duration, msgs, size int) (dups int64, fastest time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	link := p2p.LinkShape{Latency: 20 * time.Millisecond}
	wire := make([]*p2p.WireStats, 7) // the bootstrap host's last; mutate runs concurrently
	s, err := p2ptest.StartOn(ctx, "mem", 6, func(i int, c *p2p.Config) {
		c.Link, c.ForwardHold = link, hold
		c.Wire = &p2p.WireStats{}
		wire[(i+7)%7] = c.Wire
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	subs := subscribeAll(t, ctx, p2p.KindShards, s.Hosts[0], s.Hosts)
	waitFormed(t, ctx, s)
	fastest = time.Hour
	for i := range msgs {
		data := make([]byte, size)
		_, _ = rand.Read(data)
		from := i % len(s.Hosts)
		start := time.Now()
		if err := s.Hosts[from].Publish(ctx, p2p.KindShards, data); err != nil {
			t.Fatal(err)
		}
		expectAll(t, ctx, subs, data)
		// expectAll returns when the last subscriber has it: the first remote one had it
		// no later, and the hold puts a lower bound on every remote delivery.
		fastest = min(fastest, time.Since(start))
	}
	time.Sleep(2 * time.Second) // forwards still on their way are counted
	for _, w := range wire {
		for _, n := range w.Snapshot().Duplicates {
			dups += n
		}
	}
	return dups, fastest
}

// waitFormed waits until s has formed on the shards topic (p2ptest.Form).
func waitFormed(t *testing.T, ctx context.Context, s *p2ptest.Swarm) {
	t.Helper()
	var last p2ptest.Formation
	if err := p2ptest.Poll(ctx, "the swarm to form", 20*time.Millisecond, func() bool {
		last = p2ptest.Form(s.All(), []string{p2p.KindShards})
		return last.Formed()
	}); err != nil {
		t.Fatalf("%v: %v", err, last)
	}
}

// TestHeldForwardsSpareDuplicates: with flood publish every host of a connected swarm has a
// message from its publisher, and a forward that follows its check at once reaches
// neighbours before their IDONTWANTs reach the forwarder: copies arrive that nobody needed.
// Held until the mesh has said it holds the message (at most ForwardHold), the forwards go
// only to neighbours that have not, and the duplicates fall; since every neighbour says so
// within a round trip, every message reaches every host well before the hold.
func TestHeldForwardsSpareDuplicates(t *testing.T) {
	const msgs, size = 8, 2 * p2p.HoldFrom
	hold := 3 * time.Second
	none, _ := heldSwarm(t, -1, msgs, size)
	held, fastest := heldSwarm(t, hold, msgs, size)
	t.Logf("%d messages of %d bytes, 7 hosts: %d duplicates without a hold, %d with a hold of %v; the fastest delivery to all %v",
		msgs, size, none, held, hold, fastest)
	if none < int64(msgs) {
		t.Fatalf("without a hold %d duplicates for %d messages: the swarm does not show what the hold spares", none, msgs)
	}
	if 2*held > none {
		t.Fatalf("held forwards: %d duplicates, without a hold %d: want at most half", held, none)
	}
	if fastest >= hold {
		t.Fatalf("the fastest message took %v to reach every subscriber, the whole hold of %v: not let go once the mesh held it", fastest, hold)
	}
}

// TestHoldLosesNoMessageOfABurst: a held message keeps one of gossipsub's validation
// places of its topic (1,024) for the hold, and a message that finds none is dropped for
// good. Past holdSlots held at once, messages go on without a hold: 1,300 distinct
// messages published within one hold, held whole (paced, so that no queue on the way
// overflows), all arrive. They are published once the mesh has formed: before, a message
// reaches a host outside its sender's mesh only by gossipsub's lazy repair, held or not.
func TestHoldLosesNoMessageOfABurst(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := p2ptest.StartOn(ctx, "mem", 2, func(_ int, c *p2p.Config) { c.ForwardHold, c.HoldWhole = 2*time.Second, true })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	subs := subscribeAll(t, ctx, p2p.KindShards, s.Hosts[0], s.Hosts)
	waitFormed(t, ctx, s)
	const n = 1300
	go func() {
		for i := range n {
			time.Sleep(time.Millisecond)
			data := make([]byte, p2p.HoldFrom)
			_, _ = rand.Read(data[8:])
			data[0], data[1] = byte(i), byte(i>>8)
			if err := s.Hosts[0].Publish(ctx, p2p.KindShards, data); err != nil {
				return
			}
		}
	}()
	got := 0
	for got < n {
		m, err := subs[1].Next(ctx)
		if err != nil {
			t.Fatalf("%d of %d messages arrived: %v", got, n, err)
		}
		if !m.Local {
			got++
		}
	}
}
