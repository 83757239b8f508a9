package p2p

import (
	"sync/atomic"

	lpmetrics "github.com/libp2p/go-libp2p/core/metrics"
)

// bandwidth counts every byte the host sends and receives, on all protocols: it is
// libp2p's bandwidth reporter, with exact totals of its own. libp2p's counter moves what
// was marked into its totals only when its meters are swept, about once a second, so its
// totals lag behind and read zero in the host's first second; these never lag.
type bandwidth struct {
	*lpmetrics.BandwidthCounter
	sent, received atomic.Int64
}

func newBandwidth() *bandwidth { return &bandwidth{BandwidthCounter: lpmetrics.NewBandwidthCounter()} }

// LogSentMessage counts n bytes sent (libp2p's swarm calls it for every stream write).
func (b *bandwidth) LogSentMessage(n int64) {
	b.sent.Add(n)
	b.BandwidthCounter.LogSentMessage(n)
}

// LogRecvMessage counts n bytes received (libp2p's swarm calls it for every stream read).
func (b *bandwidth) LogRecvMessage(n int64) {
	b.received.Add(n)
	b.BandwidthCounter.LogRecvMessage(n)
}

// Bandwidth returns the bytes the host has sent and received since it started, over every
// protocol and connection (payload bytes as libp2p's streams see them). Safe for
// concurrent use.
func (h *Host) Bandwidth() (sent, received int64) {
	return h.bw.sent.Load(), h.bw.received.Load()
}
