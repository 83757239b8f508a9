package p2p

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	dht "github.com/libp2p/go-libp2p-kad-dht"
	dhtpb "github.com/libp2p/go-libp2p-kad-dht/pb"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	drouting "github.com/libp2p/go-libp2p/p2p/discovery/routing"
	ma "github.com/multiformats/go-multiaddr"
)

// Host is a lowband node's network presence: a libp2p host, the private DHT, the
// discovery and bootstrap loops, and gossipsub joined to the run's topics.
// All methods are safe for concurrent use.
type Host struct {
	cfg  Config
	log  *slog.Logger
	h    host.Host
	dht  *dht.IpfsDHT
	disc *drouting.RoutingDiscovery
	ps   *pubsub.PubSub
	met  *metrics
	bw   *bandwidth

	topics   map[string]*topic // by kind; written only in New
	relays   []pubsub.RelayCancelFunc
	appScore atomic.Pointer[func(peer.ID) float64]
	mesh     *meshTracer   // mesh sizes per topic, once gossipsub reports to it
	heard    *heardTracer  // which peers hold each recent message, for the forward hold
	traced   *gossipTracer // gossipsub's own counters, from its trace events
	scores   scoreBoard    // gossipsub's latest score of each connected peer

	advertised   atomic.Int64     // when the first advertisement landed, Unix ns; 0: not yet
	found        foundPeers       // the peers rendezvous lookups found advertised
	unreachable  unreachablePeers // found peers a dial failed to lately
	failedRounds atomic.Int64     // bootstrap rounds in which no peer answered
	dhtServed    atomic.Int64     // DHT requests this host answered
	staleClosed  atomic.Uint64    // connections closed by watchStaleConns

	ctx       context.Context
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	closeOnce sync.Once
}

// PeerInfo describes one connected peer.
type PeerInfo struct {
	ID      peer.ID       `json:"id"`
	Addrs   []string      `json:"addrs"`   // remote addresses of the open connections
	Latency time.Duration `json:"latency"` // smoothed round-trip time; 0 if not measured yet
}

// New starts a host: it listens, starts the DHT, joins the configured topics and
// starts the bootstrap, advertise and find-peers loops in the background. An
// unreachable bootstrap peer is not an error: the host keeps retrying. ctx bounds
// the start only; Close stops the host.
func New(ctx context.Context, cfg Config) (*Host, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	bw := newBandwidth()
	var lh host.Host
	if cfg.Libp2p != nil {
		lh = newShapedHost(cfg.Libp2p, cfg.Link, bw, cfg.Wire) // counts its bytes, shapes its link
	} else {
		var err error
		if lh, err = newLibp2p(&cfg, bw); err != nil {
			return nil, err
		}
	}
	hctx, cancel := context.WithCancel(context.Background())
	h := &Host{cfg: cfg, log: cfg.Logger.With("self", lh.ID()), h: lh, bw: bw, ctx: hctx, cancel: cancel}
	if err := h.start(); err != nil {
		cancel()
		if h.dht != nil {
			_ = h.dht.Close()
		}
		_ = lh.Close()
		return nil, err
	}
	return h, nil
}

func (h *Host) start() error {
	mode := map[string]dht.ModeOpt{DHTServer: dht.ModeServer, DHTClient: dht.ModeClient, DHTAuto: dht.ModeAutoServer}[h.cfg.DHTMode]
	announce, err := parseAddrs(h.cfg.Announce)
	if err != nil {
		return fmt.Errorf("announce address: %w", err)
	}
	opts := append([]dht.Option{dht.ProtocolPrefix(DHTPrefix(h.cfg.Network)), dht.Mode(mode),
		// The host refreshes the table on its own schedule (refreshLoop).
		dht.DisableAutoRefresh(),
		dht.OnRequestHook(func(context.Context, network.Stream, *dhtpb.Message) { h.dhtServed.Add(1) })},
		dhtAddrOptions(announce, h.cfg.PublicOnly)...)
	d, err := dht.New(h.ctx, h.h, opts...)
	if err != nil {
		return fmt.Errorf("starting DHT: %w", err)
	}
	h.dht = d
	h.disc = drouting.NewRoutingDiscovery(d)
	if h.met, err = newMetrics(h.cfg.Registerer); err != nil {
		return err
	}
	h.SetAppScore(h.cfg.AppScore)
	h.mesh = newMeshTracer()
	h.heard = newHeardTracer()
	if h.traced, err = newGossipTracer(h.cfg.Network, h.cfg.Run, h.cfg.Topics, h.cfg.Registerer); err != nil {
		return err
	}
	if h.cfg.Registerer != nil {
		if _, err := register(h.cfg.Registerer, newTopicCollector(h)); err != nil {
			return err
		}
		if _, err := register(h.cfg.Registerer, newHostCollector(h)); err != nil {
			return err
		}
	}
	if err := h.startGossip(); err != nil {
		return err
	}
	h.serveTime()
	h.watchStaleConns()
	h.wg.Add(4)
	go h.refreshLoop()
	go h.bootstrapLoop()
	go h.advertiseLoop()
	go h.findPeersLoop()
	return nil
}

// Close stops the loops, leaves the topics and closes the DHT and the host. It
// waits for the host's own goroutines. Calling it again does nothing.
func (h *Host) Close() error {
	var err error
	h.closeOnce.Do(func() {
		h.cancel()
		h.wg.Wait()
		for _, r := range h.relays {
			r()
		}
		for _, t := range h.topics {
			_ = t.t.Close() // fails only while a subscription is open; the host goes anyway
		}
		derr := h.dht.Close()
		herr := h.h.Close()
		if derr != nil {
			err = fmt.Errorf("closing DHT: %w", derr)
		} else if herr != nil {
			err = fmt.Errorf("closing host: %w", herr)
		}
	})
	return err
}

// ID is the host's peer ID.
func (h *Host) ID() peer.ID { return h.h.ID() }

// Addrs are the host's dialable addresses (announce addresses if configured,
// else listen addresses, only public ones with Config.PublicOnly), each ending in
// /p2p/<id>; none (not a bare /p2p/<id>) when it announces none. The slice is the
// caller's.
func (h *Host) Addrs() []ma.Multiaddr {
	own := h.h.Addrs()
	if len(own) == 0 {
		return nil
	}
	addrs, err := peer.AddrInfoToP2pAddrs(&peer.AddrInfo{ID: h.h.ID(), Addrs: own})
	if err != nil {
		return nil
	}
	return addrs
}

// AddrInfo is the host's ID with its (announced) addresses, without /p2p.
func (h *Host) AddrInfo() peer.AddrInfo {
	return peer.AddrInfo{ID: h.h.ID(), Addrs: h.h.Addrs()}
}

// Peers lists the connected peers, sorted by ID.
func (h *Host) Peers() []PeerInfo {
	ids := h.h.Network().Peers()
	slices.Sort(ids)
	out := make([]PeerInfo, 0, len(ids))
	for _, id := range ids {
		pi := PeerInfo{ID: id, Latency: h.h.Peerstore().LatencyEWMA(id)}
		for _, c := range h.h.Network().ConnsToPeer(id) {
			pi.Addrs = append(pi.Addrs, c.RemoteMultiaddr().String())
		}
		out = append(out, pi)
	}
	return out
}

// ConnectedPeers lists the IDs of the connected peers, sorted: a cheaper Peers.
func (h *Host) ConnectedPeers() []peer.ID {
	ids := h.h.Network().Peers()
	slices.Sort(ids)
	return ids
}

// Connect connects to a peer at once, skipping the dial back-off of earlier failed
// dials to it. It is a no-op when the host is connected to it already.
func (h *Host) Connect(ctx context.Context, ai peer.AddrInfo) error {
	return h.h.Connect(network.WithForceDirectDial(ctx, "connect"), ai)
}

// ClosePeer closes every connection to a peer.
func (h *Host) ClosePeer(p peer.ID) error { return h.h.Network().ClosePeer(p) }

// RoutingTableSize is the number of peers in the DHT routing table.
func (h *Host) RoutingTableSize() int { return h.dht.RoutingTable().Size() }

// RoutingTable lists the peers in the DHT routing table, sorted.
func (h *Host) RoutingTable() []peer.ID {
	ids := h.dht.RoutingTable().ListPeers()
	slices.Sort(ids)
	return ids
}

// KnownPeers returns connected peers and routing-table peers with their known
// addresses, for the caller to persist and pass back as Config.Cached on the next
// start. Peers without addresses are left out. Sorted by ID.
func (h *Host) KnownPeers() []peer.AddrInfo {
	ids := append(h.h.Network().Peers(), h.dht.RoutingTable().ListPeers()...)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	out := make([]peer.AddrInfo, 0, len(ids))
	for _, id := range ids {
		if id == h.h.ID() {
			continue
		}
		if addrs := h.h.Peerstore().Addrs(id); len(addrs) > 0 {
			out = append(out, peer.AddrInfo{ID: id, Addrs: addrs})
		}
	}
	return out
}

// DHTRequestsServed counts the DHT requests this host has answered since it started.
func (h *Host) DHTRequestsServed() int64 { return h.dhtServed.Load() }

// FailedBootstrapRounds counts the rounds in which neither a bootstrap nor a
// cached peer answered while the host had no connection.
func (h *Host) FailedBootstrapRounds() int64 { return h.failedRounds.Load() }

// connected reports whether the host has at least one open connection.
func (h *Host) connected() bool {
	for _, p := range h.h.Network().Peers() {
		if h.h.Network().Connectedness(p) == network.Connected {
			return true
		}
	}
	return false
}
