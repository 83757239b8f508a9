package p2ptest

import (
	"context"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/p2p"
)

// linkProto is the protocol MeasureLink sends its bytes on.
const linkProto = "/lowband-test/link/1"

// LinkCheck is one request of Bytes bytes across an emulated link, answered by one byte:
// what it should take (the bytes over the uplink, plus the latency each way), what it
// took, and their ratio (1: the link is what it says; above 1 on a loaded machine).
type LinkCheck struct {
	Bytes     int     `json:"bytes"`
	ExpectedS float64 `json:"expected_s"`
	MeasuredS float64 `json:"measured_s"`
	Ratio     float64 `json:"ratio"`
}

// MeasureLink starts two hosts on an in-memory network, both with link, and times one
// request of n bytes from one to the other once they are connected.
func MeasureLink(ctx context.Context, link p2p.LinkShape, n int) (LinkCheck, error) {
	s, err := StartOn(ctx, "mem", 1, func(_ int, c *p2p.Config) { c.Link = link })
	if err != nil {
		return LinkCheck{}, err
	}
	defer s.Close()
	s.Boot.Handle(linkProto, n, func(context.Context, peer.ID, []byte) ([]byte, error) { return []byte{1}, nil })
	to := s.Boot.ID()
	if _, err := s.Hosts[0].Request(ctx, to, linkProto, []byte{0}, 1); err != nil {
		return LinkCheck{}, fmt.Errorf("connecting: %w", err)
	}
	start := time.Now()
	if _, err := s.Hosts[0].Request(ctx, to, linkProto, make([]byte, n), 1); err != nil {
		return LinkCheck{}, fmt.Errorf("sending %d bytes: %w", n, err)
	}
	c := LinkCheck{Bytes: n, MeasuredS: time.Since(start).Seconds(), ExpectedS: 2 * link.Latency.Seconds()}
	if link.UplinkBytesPerSec > 0 {
		c.ExpectedS += float64(n+1) / link.UplinkBytesPerSec
	}
	if c.ExpectedS > 0 {
		c.Ratio = c.MeasuredS / c.ExpectedS
	}
	return c, nil
}
