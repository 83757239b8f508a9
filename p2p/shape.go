package p2p

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
)

// LinkShape emulates a node's home link on an in-memory network (Config.Libp2p): every
// byte the host writes, on every stream it opens or accepts, leaves through one uplink of
// UplinkBytesPerSec shared by all its streams (first come, first served), then arrives
// Latency later. Writes block while the uplink is busy, as on a full socket buffer.
// What a host receives is not limited: each sender's uplink paces it. The zero value
// shapes nothing.
type LinkShape struct {
	UplinkBytesPerSec float64       // 0: unlimited
	Latency           time.Duration // one way, added to every byte written
}

// shapeChunk is the most a write puts on the uplink at once, so that streams sharing
// the uplink interleave.
const shapeChunk = 16 << 10

// shapeQueue is how many chunks a stream holds in flight (written, not yet arrived).
const shapeQueue = 64

// errShapedClosed is returned by a write after the stream's write side closed.
var errShapedClosed = errors.New("stream closed for writing")

// shapedHost wraps a libp2p host so that the streams of the protocols it serves and
// opens count their bytes into bw and are shaped by its link. libp2p's own protocols
// (identify, ping) run on the wrapped host unshaped.
type shapedHost struct {
	host.Host
	link LinkShape
	up   *uplink
	bw   *bandwidth
	wire *WireStats // nil: no breakdown
}

var _ host.Host = (*shapedHost)(nil)

func newShapedHost(h host.Host, link LinkShape, bw *bandwidth, wire *WireStats) *shapedHost {
	return &shapedHost{Host: h, link: link, up: &uplink{rate: link.UplinkBytesPerSec}, bw: bw, wire: wire}
}

func (h *shapedHost) NewStream(ctx context.Context, p peer.ID, pids ...protocol.ID) (network.Stream, error) {
	s, err := h.Host.NewStream(ctx, p, pids...)
	if err != nil {
		return nil, err
	}
	return h.wrap(s), nil
}

func (h *shapedHost) SetStreamHandler(pid protocol.ID, fn network.StreamHandler) {
	h.Host.SetStreamHandler(pid, func(s network.Stream) { fn(h.wrap(s)) })
}

func (h *shapedHost) SetStreamHandlerMatch(pid protocol.ID, m func(protocol.ID) bool, fn network.StreamHandler) {
	h.Host.SetStreamHandlerMatch(pid, m, func(s network.Stream) { fn(h.wrap(s)) })
}

func (h *shapedHost) wrap(s network.Stream) network.Stream {
	ss := &shapedStream{Stream: s, h: h, reset: make(chan struct{})}
	if h.link.Latency > 0 {
		ss.q, ss.done = make(chan shapedBytes, shapeQueue), make(chan struct{})
		go ss.deliver()
	}
	return ss
}

// uplink is a first-come, first-served link of rate bytes per second.
type uplink struct {
	mu   sync.Mutex
	rate float64   // 0: unlimited
	busy time.Time // when what was put on the link so far has left
}

// reserve puts n bytes on the link and returns when they will have left it.
func (u *uplink) reserve(n int) time.Time {
	now := time.Now()
	if u.rate <= 0 {
		return now
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.busy = maxTime(u.busy, now).Add(time.Duration(float64(n) / u.rate * float64(time.Second)))
	return u.busy
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// shapedBytes are bytes in flight and when they arrive; nil bytes end the write side.
type shapedBytes struct {
	b       []byte
	arrival time.Time
}

// shapedStream is a stream whose writes go through its host's uplink and, with a
// latency, through a delay line (deliver) to the wrapped stream.
type shapedStream struct {
	network.Stream
	h         *shapedHost
	q         chan shapedBytes // to deliver; nil without latency
	done      chan struct{}    // closed when deliver returns
	reset     chan struct{}    // closed by Reset
	resetOnce sync.Once
	closeOnce sync.Once
	closed    atomic.Bool
	err       atomic.Pointer[error] // the wrapped stream's first write error
}

func (s *shapedStream) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		c := p[:min(len(p), shapeChunk)]
		if err := s.writeChunk(c); err != nil {
			return n, err
		}
		n += len(c)
		p = p[len(c):]
	}
	return n, nil
}

func (s *shapedStream) writeChunk(c []byte) error {
	if s.closed.Load() {
		return errShapedClosed
	}
	if e := s.err.Load(); e != nil {
		return *e
	}
	left := s.h.up.reserve(len(c))
	if err := s.waitUntil(left); err != nil {
		return err
	}
	s.h.bw.LogSentMessage(int64(len(c)))
	s.h.wire.stream(s.Protocol(), true, len(c))
	if s.q == nil {
		_, err := s.Stream.Write(c)
		return err
	}
	b := append([]byte(nil), c...)
	select {
	case s.q <- shapedBytes{b: b, arrival: left.Add(s.h.link.Latency)}:
		return nil
	case <-s.done:
		if e := s.err.Load(); e != nil {
			return *e
		}
		return errShapedClosed
	}
}

// waitUntil returns at t, or with network.ErrReset once the stream is reset.
func (s *shapedStream) waitUntil(t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-s.reset:
		return network.ErrReset
	}
}

// deliver writes each chunk to the wrapped stream when it arrives, until the write side
// ends (nil bytes), a write fails or the stream is reset.
func (s *shapedStream) deliver() {
	defer close(s.done)
	for {
		var c shapedBytes
		select {
		case c = <-s.q:
		case <-s.reset:
			return
		}
		if c.b == nil || s.waitUntil(c.arrival) != nil {
			return
		}
		if _, err := s.Stream.Write(c.b); err != nil {
			s.err.CompareAndSwap(nil, &err)
			return
		}
	}
}

func (s *shapedStream) Read(p []byte) (int, error) {
	n, err := s.Stream.Read(p)
	s.h.bw.LogRecvMessage(int64(n))
	s.h.wire.stream(s.Protocol(), false, n)
	return n, err
}

// flush ends the write side once: what is in flight arrives first.
func (s *shapedStream) flush() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		if s.q == nil {
			return
		}
		select {
		case s.q <- shapedBytes{}:
		case <-s.done:
		}
		<-s.done
	})
	if e := s.err.Load(); e != nil {
		return *e
	}
	return nil
}

func (s *shapedStream) CloseWrite() error {
	if err := s.flush(); err != nil {
		return err
	}
	return s.Stream.CloseWrite()
}

func (s *shapedStream) Close() error {
	ferr := s.flush()
	if err := s.Stream.Close(); err != nil {
		return err
	}
	return ferr
}

func (s *shapedStream) Reset() error {
	s.resetOnce.Do(func() { close(s.reset) })
	return s.Stream.Reset()
}

func (s *shapedStream) ResetWithError(code network.StreamErrorCode) error {
	s.resetOnce.Do(func() { close(s.reset) })
	return s.Stream.ResetWithError(code)
}
