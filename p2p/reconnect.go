package p2p

import (
	"cmp"
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
	msmux "github.com/multiformats/go-multistream"
)

// A peer whose process died without closing its connections (kill -9, a crash, a power
// cut) and that connects again leaves this host holding its old connection: over TCP the
// peer's kernel closes it, but a QUIC connection stays open until its idle timeout (30 s
// in go-libp2p). The swarm picks the connection with the most streams for every new
// stream, and gossipsub keeps writing to the stream it had, so until then the peer hears
// no gossip and no fetch reaches it: a restarted node closes its first rounds alone.
//
// So when a peer connects while this host holds other connections to it, the host asks
// for the time (the time protocol answers at once) over each older connection. When one
// stays open and silent for staleProbeTimeout while the new one answers (staleConn), the
// host closes every connection to the peer and dials it again at once: closing only the
// dead one would leave gossipsub, which forgets a peer's subscriptions when the
// connection under its stream closes, not knowing the peer is subscribed until the peer
// changes its subscriptions. A fresh connection gives both sides' gossipsub a fresh start.
const (
	staleProbeTimeout = 2 * time.Second
	reconnectTimeout  = 10 * time.Second
)

// staleConns is the network notifiee that probes a reconnecting peer's older
// connections.
type staleConns struct {
	h       *Host
	mu      sync.Mutex
	probing map[network.Conn]bool
}

func (h *Host) watchStaleConns() {
	h.h.Network().Notify(&staleConns{h: h, probing: map[network.Conn]bool{}})
}

func (s *staleConns) Connected(n network.Network, c network.Conn) {
	for _, old := range n.ConnsToPeer(c.RemotePeer()) {
		if old == c || old.IsClosed() || old.Stat().Opened.After(c.Stat().Opened) {
			continue
		}
		s.mu.Lock()
		busy := s.probing[old]
		s.probing[old] = true
		s.mu.Unlock()
		if busy {
			continue
		}
		go func() { // bounded by twice staleProbeTimeout and reconnectTimeout
			defer func() { s.mu.Lock(); delete(s.probing, old); s.mu.Unlock() }()
			if !s.h.staleConn(old, c) {
				return
			}
			p := old.RemotePeer()
			s.h.log.Debug("a peer that connected again left a dead connection: reconnecting", "peer", p.ShortString(), "addr", old.RemoteMultiaddr())
			s.h.staleClosed.Add(1)
			_ = n.ClosePeer(p)
			dctx, cancel := context.WithTimeout(s.h.ctx, reconnectTimeout)
			defer cancel()
			// Not Host.Connect: its direct-dial flag drops relay addresses, and a peer
			// behind NAT may be reachable through a relay only.
			if err := s.h.h.Connect(dctx, peer.AddrInfo{ID: p}); err != nil {
				s.h.log.Debug("reconnecting to a peer after closing its dead connection", "peer", p.ShortString(), "err", err)
			}
		}()
	}
}

func (s *staleConns) Disconnected(network.Network, network.Conn) {}
func (s *staleConns) Listen(network.Network, ma.Multiaddr)       {}
func (s *staleConns) ListenClose(network.Network, ma.Multiaddr)  {}

// staleConn reports whether old, an older connection of the peer of c, is dead while c
// is alive: old stays open and does not answer within staleProbeTimeout, and c answers.
// A probe that fails otherwise (a reset, a close: the swarm or the peer is closing a
// duplicate connection, which is no sign of a dead process) or a host too loaded to
// answer on either connection changes nothing.
func (h *Host) staleConn(old, c network.Conn) bool {
	ctx, cancel := context.WithTimeout(h.ctx, staleProbeTimeout)
	defer cancel()
	if err := h.probeConn(ctx, old); !timedOut(err) || old.IsClosed() {
		return false
	}
	ctx, cancel = context.WithTimeout(h.ctx, staleProbeTimeout)
	defer cancel()
	return !c.IsClosed() && h.probeConn(ctx, c) == nil
}

// timedOut reports whether err is a deadline's: the stream's (a net.Error that timed out,
// as each transport reports it) or the context's.
func timedOut(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// probeConn asks the peer for its time over connection c itself, not the one the swarm
// would choose.
func (h *Host) probeConn(ctx context.Context, c network.Conn) error {
	st, err := c.NewStream(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = st.Reset() }()
	if dl, ok := ctx.Deadline(); ok {
		_ = st.SetDeadline(dl)
	}
	// Some transports ignore deadlines (go-libp2p's mocknet): the context's end resets
	// the stream, and the probe then fails with the context's error.
	stop := context.AfterFunc(ctx, func() { _ = st.Reset() })
	defer stop()
	if err := probeTime(h, st); err != nil {
		return cmp.Or(ctx.Err(), err)
	}
	return nil
}

// probeTime negotiates the time protocol on st and reads the peer's time.
func probeTime(h *Host, st network.Stream) error {
	proto := TimeProtocol(h.cfg.Network)
	if err := msmux.SelectProtoOrFail(proto, st); err != nil {
		return err
	}
	_ = st.SetProtocol(proto)
	b, err := readCapped(st, TimeSize)
	if err != nil {
		return err
	}
	_, err = DecodeTime(b)
	return err
}

// StaleConnsClosed is how many times the host found a dead connection of a peer that
// connected again, and reconnected to it.
func (h *Host) StaleConnsClosed() uint64 { return h.staleClosed.Load() }
