package p2p_test

import (
	"context"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/p2p/p2ptest"
)

// TestInMemoryHostCountsWireBytes: a host on an in-memory network counts the bytes of a
// request it sends and of the response it reads, as a host on sockets does.
func TestInMemoryHostCountsWireBytes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := p2ptest.StartOn(ctx, "mem", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Boot.Handle("/lowband-test/echo/1", 1<<20, func(_ context.Context, _ peer.ID, req []byte) ([]byte, error) { return req, nil })
	sent0, recv0 := s.Hosts[0].Bandwidth()
	if _, err := s.Hosts[0].Request(ctx, s.Boot.ID(), "/lowband-test/echo/1", make([]byte, 100_000), 1<<20); err != nil {
		t.Fatal(err)
	}
	sent, recv := s.Hosts[0].Bandwidth()
	if sent-sent0 < 100_000 || recv-recv0 < 100_000 {
		t.Fatalf("sent %d, received %d bytes for a 100000-byte request and its echo", sent-sent0, recv-recv0)
	}
}

// TestEmulatedLinkTakesBytesOverUplinkPlusLatency: a request across an emulated link of
// 10 Mbit/s and 50 ms takes its bytes over the uplink plus the latency each way, give or
// take the load of a shared machine (the ratio is logged; only a link faster than it says,
// or many times slower, fails).
func TestEmulatedLinkTakesBytesOverUplinkPlusLatency(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, link := range []p2p.LinkShape{
		{UplinkBytesPerSec: 10e6 / 8, Latency: 50 * time.Millisecond},
		{UplinkBytesPerSec: 10e6 / 8},
		{Latency: 200 * time.Millisecond},
	} {
		c, err := p2ptest.MeasureLink(ctx, link, 500_000)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%+v: %+v", link, c)
		if c.Ratio < 0.95 || c.Ratio > 5 {
			t.Errorf("%+v: %d bytes took %.3f s, want about %.3f s", link, c.Bytes, c.MeasuredS, c.ExpectedS)
		}
	}
}

// TestEmulatedUplinkSharedByStreams: two requests sent at once from one host share its
// uplink: together they take about their bytes over it, not one's.
func TestEmulatedUplinkSharedByStreams(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	link := p2p.LinkShape{UplinkBytesPerSec: 10e6 / 8}
	s, err := p2ptest.StartOn(ctx, "mem", 2, func(_ int, c *p2p.Config) { c.Link = link })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, h := range s.Hosts {
		h.Handle("/lowband-test/sink/1", 1<<20, func(context.Context, peer.ID, []byte) ([]byte, error) { return []byte{1}, nil })
	}
	const n = 250_000
	from := s.Boot
	for _, h := range s.Hosts { // connect first
		if _, err := from.Request(ctx, h.ID(), "/lowband-test/sink/1", []byte{0}, 1); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	errs := make(chan error, len(s.Hosts))
	for _, h := range s.Hosts {
		go func() {
			_, err := from.Request(ctx, h.ID(), "/lowband-test/sink/1", make([]byte, n), 1)
			errs <- err
		}()
	}
	for range s.Hosts {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	took, want := time.Since(start).Seconds(), 2*n/link.UplinkBytesPerSec
	t.Logf("two requests of %d bytes: %.3f s, want about %.3f s", n, took, want)
	if took < 0.95*want {
		t.Fatalf("two requests of %d bytes took %.3f s: faster than one uplink (%.3f s)", n, took, want)
	}
}
