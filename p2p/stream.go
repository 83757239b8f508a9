package p2p

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
)

// Handler serves one request on a stream protocol. It returns the response, or an
// error, which resets the stream (the requester sees a reset, not a reason).
type Handler func(ctx context.Context, from peer.ID, req []byte) ([]byte, error)

// Handle serves proto: each inbound stream carries one request (at most maxReq
// bytes, ended by the requester closing its side) and one response. The whole
// exchange is bounded by Config.StreamTimeout; a request over maxReq, a read
// error or a handler error resets the stream. fn runs on its own goroutine per
// stream and must be safe for concurrent use.
func (h *Host) Handle(proto string, maxReq int, fn Handler) {
	h.h.SetStreamHandler(protocol.ID(proto), func(s network.Stream) {
		if err := h.serve(s, maxReq, fn); err != nil {
			_ = s.Reset()
			h.log.Debug("stream request failed", "proto", proto, "peer", s.Conn().RemotePeer(), "err", err)
			return
		}
		_ = s.Close()
	})
}

// RemoveHandler stops serving proto.
func (h *Host) RemoveHandler(proto string) { h.h.RemoveStreamHandler(protocol.ID(proto)) }

func (h *Host) serve(s network.Stream, maxReq int, fn Handler) error {
	ctx, cancel := context.WithTimeout(h.ctx, h.cfg.StreamTimeout)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { _ = s.Reset() })
	defer stop()
	if err := s.SetDeadline(time.Now().Add(h.cfg.StreamTimeout)); err != nil {
		return fmt.Errorf("setting deadline: %w", err)
	}
	req, err := readCapped(s, maxReq)
	if errors.Is(err, errTooLarge) {
		return ErrRequestTooLarge
	}
	if err != nil {
		return fmt.Errorf("reading request: %w", err)
	}
	resp, err := fn(ctx, s.Conn().RemotePeer(), req)
	if err != nil {
		return fmt.Errorf("handler: %w", err)
	}
	if _, err := s.Write(resp); err != nil {
		return fmt.Errorf("writing response: %w", err)
	}
	return nil
}

// Request opens a stream to a peer on proto, sends req and returns the response,
// which may be at most maxResp bytes (ErrResponseTooLarge otherwise). The
// exchange ends at ctx's deadline or after Config.StreamTimeout, whichever comes
// first. On any error the stream is reset.
func (h *Host) Request(ctx context.Context, to peer.ID, proto string, req []byte, maxResp int) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, h.cfg.StreamTimeout)
	defer cancel()
	s, err := h.h.NewStream(ctx, to, protocol.ID(proto))
	if err != nil {
		return nil, fmt.Errorf("opening %s stream to %s: %w", proto, to, err)
	}
	stop := context.AfterFunc(ctx, func() { _ = s.Reset() })
	defer stop()
	resp, err := exchange(ctx, s, req, maxResp)
	if err != nil {
		_ = s.Reset()
		var ne net.Error
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%w)", ctx.Err(), err)
		} else if errors.As(err, &ne) && ne.Timeout() {
			// The stream deadline (the context's) fired a moment before the context.
			err = fmt.Errorf("%w (%w)", context.DeadlineExceeded, err)
		}
		return nil, fmt.Errorf("%s request to %s: %w", proto, to, err)
	}
	_ = s.Close()
	return resp, nil
}

func exchange(ctx context.Context, s network.Stream, req []byte, maxResp int) ([]byte, error) {
	if dl, ok := ctx.Deadline(); ok {
		if err := s.SetDeadline(dl); err != nil {
			return nil, fmt.Errorf("setting deadline: %w", err)
		}
	}
	if _, err := s.Write(req); err != nil {
		return nil, fmt.Errorf("writing request: %w", err)
	}
	// CloseWrite fails when the remote has already reset the stream, and the muxer
	// reports that in its own error type; the read below reports it as network.ErrReset,
	// so the read's error wins.
	closeErr := s.CloseWrite()
	resp, err := readCapped(s, maxResp)
	if errors.Is(err, errTooLarge) {
		return nil, ErrResponseTooLarge
	}
	if err != nil {
		return nil, fmt.Errorf("reading response: %w", err)
	}
	if closeErr != nil {
		return nil, fmt.Errorf("closing request: %w", closeErr)
	}
	return resp, nil
}

var errTooLarge = errors.New("too large")

// readCapped reads r to EOF, failing with errTooLarge as soon as more than max
// bytes arrive. It allocates as data arrives, not max bytes up front.
func readCapped(r io.Reader, max int) ([]byte, error) {
	if max < 0 {
		max = 0
	}
	b, err := io.ReadAll(io.LimitReader(r, int64(max)+1))
	if err != nil {
		return nil, err
	}
	if len(b) > max {
		return nil, errTooLarge
	}
	return b, nil
}
