package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/p2p/p2ptest"
)

// linkCheckBytes is what the bench sends across one emulated link before a run, to
// check that the link is what it says.
const linkCheckBytes = 1 << 20

// swarmLinks is how a swarm's nodes are linked: loopback sockets, or an in-memory
// network on which each node has an emulated home link.
type swarmLinks struct {
	mem  *p2ptest.MemNet // nil on loopback
	link p2p.LinkShape
	// wire breaks down each host's bytes, in the order they started (the bootstrap
	// node first); written by hook, which startSwarm calls in turn.
	wire []*p2p.WireStats
}

// newSwarmLinks makes the in-memory network when opt asks for emulated links.
func newSwarmLinks(opt SwarmOptions) *swarmLinks {
	if opt.LinkMbps == 0 && opt.LatencyMS == 0 {
		return &swarmLinks{}
	}
	return &swarmLinks{mem: p2ptest.NewMemNet(), link: p2p.LinkShape{
		UplinkBytesPerSec: opt.LinkMbps * 1e6 / 8,
		Latency:           time.Duration(opt.LatencyMS * float64(time.Millisecond)),
	}}
}

// hook is node.Options.P2P: it puts a node's host on the in-memory network with its
// link; nil on loopback.
func (l *swarmLinks) hook() func(*p2p.Config) error {
	if l.mem == nil {
		return nil
	}
	return func(c *p2p.Config) error {
		c.Link = l.link
		c.Wire = &p2p.WireStats{}
		l.wire = append(l.wire, c.Wire)
		return l.mem.Attach(c)
	}
}

// breakdown sums the wire breakdown of the training nodes for which honest(i) holds, per
// node-round over rounds; nil on loopback.
func (l *swarmLinks) breakdown(honest func(i int) bool, rounds int) *WireBreakdown {
	sum, n := l.sum(honest)
	if n == 0 {
		return nil
	}
	return newWireBreakdown(sum, float64(n*rounds))
}

// sum adds up the wire counts of the training nodes for which honest(i) holds, and says
// how many they were; none on loopback.
func (l *swarmLinks) sum(honest func(i int) bool) (p2p.WireSnapshot, int) {
	var sum p2p.WireSnapshot
	n := 0
	if l.mem == nil || len(l.wire) < 2 {
		return sum, 0
	}
	for i, w := range l.wire[1:] {
		if honest(i) {
			sum.Add(w.Snapshot())
			n++
		}
	}
	return sum, n
}

// describe names the transport for the result.
func (l *swarmLinks) describe() string {
	if l.mem == nil {
		return "loopback (TCP and QUIC)"
	}
	up := "unlimited"
	if l.link.UplinkBytesPerSec > 0 {
		up = fmt.Sprintf("%g Mbit/s", l.link.UplinkBytesPerSec*8/1e6)
	}
	return fmt.Sprintf("in-memory (mocknet), emulated links: uplink %s per node, latency %v one way", up, l.link.Latency)
}

// check times one transfer across an emulated link like the nodes'; nil on loopback.
func (l *swarmLinks) check(ctx context.Context) (*p2ptest.LinkCheck, error) {
	if l.mem == nil {
		return nil, nil
	}
	c, err := p2ptest.MeasureLink(ctx, l.link, linkCheckBytes)
	if err != nil {
		return nil, fmt.Errorf("bench swarm: checking an emulated link: %w", err)
	}
	return &c, nil
}

// close closes the in-memory network once the nodes have stopped.
func (l *swarmLinks) close() error {
	if l.mem == nil {
		return nil
	}
	return l.mem.Close()
}
