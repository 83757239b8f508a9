package p2p_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/p2p/p2ptest"
)

// TestProberMeasuresAHostsClock: a host answers the time protocol, and a prober on the same
// machine measures its clock within the exchange's round trip of its own.
func TestProberMeasuresAHostsClock(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := p2ptest.Start(ctx, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	pr, err := p2p.NewProber()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	r := pr.Clock(ctx, s.Boot.AddrInfo(), p2p.TimeProtocol(p2ptest.Network))
	if r.Err != nil || r.RTT <= 0 || r.Offset.Abs() > r.RTT/2+50*time.Millisecond {
		t.Fatalf("clock of a host on this machine: offset %v, rtt %v, %v", r.Offset, r.RTT, r.Err)
	}
	if r := pr.Clock(ctx, s.Boot.AddrInfo(), p2p.TimeProtocol("another-net")); r.Err == nil {
		t.Fatal("a host answered the time protocol of another network")
	}
}

func TestDecodeTimeRefusesOtherSizes(t *testing.T) {
	now := time.Unix(1_800_000_000, 123)
	if got, err := p2p.DecodeTime(p2p.EncodeTime(now)); err != nil || !got.Equal(now) {
		t.Fatalf("round trip: %v, %v", got, err)
	}
	for _, n := range []int{0, 7, 9, 1 << 10} {
		if _, err := p2p.DecodeTime(make([]byte, n)); !errors.Is(err, p2p.ErrTimeAnswer) {
			t.Errorf("%d bytes: %v", n, err)
		}
	}
}

func FuzzDecodeTime(f *testing.F) {
	f.Add(p2p.EncodeTime(time.Unix(1_800_000_000, 0)))
	f.Add([]byte{})
	f.Add(make([]byte, 9))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := p2p.DecodeTime(b)
		if (err == nil) != (len(b) == p2p.TimeSize) {
			t.Fatalf("%d bytes: %v", len(b), err)
		}
		if err == nil && string(p2p.EncodeTime(got)) != string(b) {
			t.Fatalf("%x decodes to %v, which encodes differently", b, got)
		}
	})
}
