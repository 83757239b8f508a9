package p2p

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/libp2p/go-libp2p/p2p/muxer/yamux"
	"github.com/libp2p/go-libp2p/p2p/security/noise"
	quic "github.com/libp2p/go-libp2p/p2p/transport/quic"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"

	"github.com/lowband/lowband/version"
)

// Stages of a probe, in order. A ProbeResult's Stage is where it stopped.
const (
	StageDial     = "dial"     // no connection: unreachable, refused, timed out, or another peer ID there
	StageProtocol = "protocol" // connected, but the peer does not speak the protocol
	StageDone     = "done"     // connected and the protocol was negotiated
)

// ProbeResult is what a probe found out about one peer.
type ProbeResult struct {
	Stage string        // StageDial, StageProtocol or StageDone
	Addr  string        // the remote address of the connection; empty without one
	Took  time.Duration // from the dial to the protocol's answer (or to the failure)
	Agent string        // the agent version the peer sent in identify, if it did in time
	Err   error         // why it stopped before StageDone
}

// Prober dials peers from a short-lived host of its own (a fresh identity, no listen
// address, the transports and security of a lowband host) to see whether they answer
// and speak a protocol. It is safe for concurrent use; Close stops it.
type Prober struct {
	h host.Host
}

// NewProber starts the prober's host.
func NewProber() (*Prober, error) {
	h, err := libp2p.New(
		libp2p.NoListenAddrs,
		libp2p.Transport(tcp.NewTCPTransport),
		libp2p.Transport(quic.NewTransport),
		libp2p.Security(noise.ID, noise.New),
		libp2p.Muxer(yamux.ID, yamux.DefaultTransport),
		libp2p.UserAgent(version.Agent()),
		libp2p.DisableMetrics(),
	)
	if err != nil {
		return nil, fmt.Errorf("starting the probe host: %w", err)
	}
	return &Prober{h: h}, nil
}

// Close stops the prober's host.
func (p *Prober) Close() error { return p.h.Close() }

// Probe connects to ai and opens a stream of proto, within ctx's deadline. It never
// returns an error itself: the result says how far it got.
func (p *Prober) Probe(ctx context.Context, ai peer.AddrInfo, proto protocol.ID) ProbeResult {
	start := time.Now()
	ctx = network.WithForceDirectDial(ctx, "probe")
	if err := p.h.Connect(ctx, ai); err != nil {
		return ProbeResult{Stage: StageDial, Took: time.Since(start), Err: err}
	}
	defer func() { _ = p.h.Network().ClosePeer(ai.ID) }()
	r := ProbeResult{Stage: StageProtocol}
	if cs := p.h.Network().ConnsToPeer(ai.ID); len(cs) > 0 {
		r.Addr = cs[0].RemoteMultiaddr().String()
	}
	s, err := p.h.NewStream(ctx, ai.ID, proto)
	r.Took = time.Since(start)
	if err != nil {
		r.Err = err
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			r.Err = fmt.Errorf("no answer to %s in time: %w", proto, err)
		}
		return r
	}
	_ = s.Reset()
	r.Stage = StageDone
	if v, err := p.h.Peerstore().Get(ai.ID, "AgentVersion"); err == nil {
		r.Agent, _ = v.(string)
	}
	return r
}

// DHTProtocol is the private DHT's stream protocol, /lowband/<net>/kad/1.0.0: the one a
// bootstrap peer of the network must speak.
func DHTProtocol(network string) protocol.ID {
	return DHTPrefix(network) + "/kad/1.0.0"
}
