package p2p

import lpmetrics "github.com/libp2p/go-libp2p/core/metrics"

// bandwidth counts every byte the host sends and receives, on all protocols (libp2p's
// bandwidth reporter).
type bandwidth struct{ c *lpmetrics.BandwidthCounter }

func newBandwidth() *bandwidth { return &bandwidth{c: lpmetrics.NewBandwidthCounter()} }

// Bandwidth returns the bytes the host has sent and received since it started, over every
// protocol and connection (payload bytes as libp2p's streams see them). Safe for
// concurrent use.
func (h *Host) Bandwidth() (sent, received int64) {
	t := h.bw.c.GetBandwidthTotals()
	return t.TotalOut, t.TotalIn
}
