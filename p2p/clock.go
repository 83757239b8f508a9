package p2p

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
)

// TimeProtocol is the stream protocol on which a host tells its clock: it writes its time
// (TimeSize bytes) and closes the stream, whatever the requester sends. `lowband doctor`
// uses it to measure this machine's clock against the network's.
func TimeProtocol(network string) protocol.ID {
	return protocol.ID("/lowband/" + network + "/time/1.0.0")
}

// TimeSize is the size of a time answer: Unix nanoseconds, big-endian, two's complement.
const TimeSize = 8

// timeAnswerTimeout bounds writing one time answer.
const timeAnswerTimeout = 5 * time.Second

// ErrTimeAnswer is a time answer of the wrong size.
var ErrTimeAnswer = errors.New("time answer is not 8 bytes")

// EncodeTime is a time answer.
func EncodeTime(t time.Time) []byte { return binary.BigEndian.AppendUint64(nil, uint64(t.UnixNano())) }

// DecodeTime reads a time answer from a peer: exactly TimeSize bytes.
func DecodeTime(b []byte) (time.Time, error) {
	if len(b) != TimeSize {
		return time.Time{}, fmt.Errorf("%w: %d bytes", ErrTimeAnswer, len(b))
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(b))), nil
}

// serveTime answers TimeProtocol on the host.
func (h *Host) serveTime() {
	h.h.SetStreamHandler(TimeProtocol(h.cfg.Network), func(s network.Stream) {
		_ = s.SetDeadline(time.Now().Add(timeAnswerTimeout))
		if _, err := s.Write(EncodeTime(time.Now())); err != nil {
			_ = s.Reset()
			return
		}
		_ = s.Close()
	})
}

// ClockResult is what Prober.Clock measured of one peer's clock.
type ClockResult struct {
	// Offset is the peer's clock minus this machine's, at the middle of the exchange:
	// positive when this machine is behind. It is known within RTT/2.
	Offset time.Duration
	RTT    time.Duration // from opening the stream to the answer
	Err    error         // no answer: no connection, the protocol refused, a bad answer
}

// Clock connects to ai and asks its time on proto (TimeProtocol of the network), within
// ctx's deadline. It never returns an error itself: the result says what went wrong.
func (p *Prober) Clock(ctx context.Context, ai peer.AddrInfo, proto protocol.ID) ClockResult {
	ctx = network.WithForceDirectDial(ctx, "clock")
	if err := p.h.Connect(ctx, ai); err != nil {
		return ClockResult{Err: err}
	}
	defer func() { _ = p.h.Network().ClosePeer(ai.ID) }()
	start := time.Now()
	s, err := p.h.NewStream(ctx, ai.ID, proto)
	if err != nil {
		return ClockResult{Err: err}
	}
	defer func() { _ = s.Reset() }()
	if dl, ok := ctx.Deadline(); ok {
		_ = s.SetDeadline(dl)
	}
	b, err := readCapped(s, TimeSize)
	end := time.Now()
	if err != nil {
		return ClockResult{Err: fmt.Errorf("reading the time: %w", err)}
	}
	t, err := DecodeTime(b)
	if err != nil {
		return ClockResult{Err: err}
	}
	rtt := end.Sub(start)
	return ClockResult{Offset: t.Sub(start.Add(rtt / 2)), RTT: rtt}
}
