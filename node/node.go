package node

import (
	"cmp"
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/connmgr"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/node/attest"
	"github.com/lowband/lowband/node/web"
	"github.com/lowband/lowband/p2p"
)

// Options are what New needs. Config and Spec come from the home directory (Home.Load).
type Options struct {
	Home    configs.Home
	Config  *configs.Config
	Spec    *configs.Spec
	Role    string // configs.RoleNode or configs.RoleBootstrap; empty uses Config.Role
	Logger  *slog.Logger
	Version string
	// Adversary, when set, makes the node misbehave in that way (AdversaryKinds); only on
	// a network whose spec allows it.
	Adversary string
	// P2P, if set, edits the host's config before the host starts: benchmarks run nodes
	// on an in-memory network with emulated links with it (p2p.Config.Libp2p and Link).
	P2P func(*p2p.Config) error
	// Compute, if set, is called before each inner step and each held-out evaluation, and
	// the function it returns after: an in-process swarm shares a limit of its cores among
	// its nodes with it, so that a node's network work does not wait behind many nodes'
	// compute, as it would not on a machine of its own (bench swarm).
	Compute func() (release func())

	// gater, if set, decides which connections the host may open and accept: tests cut a
	// node off the network with it (p2ptest.Gate).
	gater connmgr.ConnectionGater
	// reachability, if set, takes the place of AutoNAT's verdict (p2p.Config's
	// ForceReachability): tests put a node behind a relay on loopback with it.
	reachability string
}

// Node is a running lowband node. Its methods are safe for concurrent use.
type Node struct {
	opts    Options
	role    string
	network string // opts.Spec.NetworkID(), which hashes the spec
	log     *slog.Logger
	host    *p2p.Host
	wire    *p2p.WireStats // the host's wire breakdown, for benchmarks; nil: none
	// genesisLook runs the rendezvous lookups of round 0's wait for the genesis peers.
	genesisLook oneLook
	// genesisQuorum is when round 0's wait came to lack only genesis peers not found
	// (quorumWait); zero while it lacks more. Only the loop's goroutine touches it.
	genesisQuorum time.Time
	// plainCommitted holds the peers that refused fetchCommittedSame but answered in plain
	// (builds from before it), each until when it is asked for committed records in plain
	// (askCommitted).
	plainCommitted sync.Map
	// wholeHeads holds the peers that refused fetchCommittedDigest but answered with whole
	// records (builds from before it), each until when they are asked for whole records
	// (headRefs).
	wholeHeads sync.Map
	api        *apiServer
	ledger     *ledger        // nil on a bootstrap node
	train      *trainingParts // nil on a bootstrap node
	checks     *fullChecks    // nil on a bootstrap node
	adv        *adversary     // nil unless the node runs an adversary mode
	// ckptSync fetches checkpoints from peers; announce wakes the loop that announces
	// the kept ones (both nil on a bootstrap node).
	ckptSync *ckptSyncer
	announce chan struct{}
	// penalties lower the gossip score of peers that sent provably wrong bytes outside
	// gossip (checkpoints).
	penalties  *penalties
	joinStatus atomic.Pointer[JoinStatus] // how the node joined a run under way (nil: it did not)
	resyncs    atomic.Int64               // catch-ups while running (resync)
	lastResync atomic.Pointer[ResyncStatus]
	started    time.Time
	rng        *rand.Rand // samples the peers cache; used only by Run's goroutine

	closeOnce sync.Once
	closeErr  error
}

// peerCacheInterval is how often the node saves the peers it knows to the home directory.
const peerCacheInterval = 30 * time.Second

// New starts a node: the libp2p host, the DHT and gossip, and the local HTTP API, whose
// address it writes to the home directory. On error nothing is left running.
func New(ctx context.Context, opts Options) (_ *Node, err error) {
	role := opts.Role
	if role == "" {
		role = opts.Config.Role
	}
	if role != configs.RoleNode && role != configs.RoleBootstrap {
		return nil, fmt.Errorf("unknown role %q (want node or bootstrap)", role)
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	n := &Node{opts: opts, role: role, network: opts.Spec.NetworkID(), log: log, started: time.Now(), rng: newRand(), penalties: newPenalties(time.Now)}
	defer func() {
		if err != nil {
			n.Close()
		}
	}()

	key, err := opts.Home.LoadIdentity()
	if err != nil {
		return nil, err
	}
	noLedger := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "a bootstrap node keeps no ledger", http.StatusNotFound)
	})
	extra := map[string]http.Handler{"/ledger": noLedger, "/evidence": noLedger, "/evidence/{id}": noLedger, "/agreement": noLedger}
	extra["/"] = web.Handler() // the dashboard
	if role == configs.RoleNode {
		if err := attest.CheckStart(opts.Config, opts.Spec); err != nil {
			return nil, fmt.Errorf("refusing to start: %w", err)
		}
		if err := CheckAdversary(opts.Adversary, opts.Config, opts.Spec); err != nil {
			return nil, fmt.Errorf("refusing to start: %w", err)
		}
		if n.ledger, err = openLedger(opts.Home, opts.Spec); err != nil {
			return nil, err
		}
		extra["/ledger"] = n.ledger.handler()
		maps.Copy(extra, n.ledger.evidenceHandlers())
		extra["/agreement"] = n.agreementHandler()
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	met, err := newGossipMetrics(reg)
	if err != nil {
		return nil, err
	}
	if n.ledger != nil {
		if err := n.startTraining(key, met, reg); err != nil {
			return nil, err
		}
	}
	pcfg, err := n.p2pConfig(key, reg)
	if err != nil {
		return nil, err
	}
	// Every topic is joined with its validator, on a bootstrap node too: a relay without
	// one would forward anything. A bootstrap node runs the wire checks alone.
	var full map[string]fullCheck
	if n.checks != nil {
		full = n.checks.checks()
	}
	pcfg.Validators = validators(wireOf(opts.Spec), full, met)
	if n.adv != nil {
		n.adv.validators(pcfg.Validators)
	}
	if opts.P2P != nil {
		if err := opts.P2P(&pcfg); err != nil {
			return nil, fmt.Errorf("host config: %w", err)
		}
	}
	n.wire = pcfg.Wire
	if n.host, err = p2p.New(ctx, pcfg); err != nil {
		return nil, fmt.Errorf("starting libp2p host: %w", err)
	}
	if n.checks != nil {
		n.serveFetch()
	}
	if n.api, err = startAPI(opts.Config.API.Listen, n, reg, extra); err != nil {
		return nil, err
	}
	if err := configs.WriteFileAtomic(opts.Home.APIAddrPath(), []byte(n.api.Addr()+"\n"), 0o644); err != nil {
		return nil, fmt.Errorf("writing API address: %w", err)
	}
	log.Info("node started", "peer_id", n.host.ID().String(), "role", role,
		"network", n.network, "run", opts.Spec.Run, "api", "http://"+n.api.Addr(),
		"addrs", addrStrings(n.host.Addrs()))
	return n, nil
}

func (n *Node) p2pConfig(key crypto.PrivKey, reg prometheus.Registerer) (p2p.Config, error) {
	c, s := n.opts.Config, n.opts.Spec
	boot, err := parsePeerAddrs(append(append([]string{}, s.Bootstrap...), c.P2P.Bootstrap...))
	if err != nil {
		return p2p.Config{}, err
	}
	var appScore func(peer.ID) float64
	if n.ledger != nil {
		appScore = func(id peer.ID) float64 { return n.ledger.appScore(id) + n.penalties.score(id) }
	}
	cached, err := loadPeerCache(n.opts.Home.PeersPath())
	if err != nil {
		n.log.Warn("ignoring the peers cache", "err", err)
	}
	return p2p.Config{
		Identity:          key,
		Listen:            c.P2P.Listen,
		Announce:          c.P2P.Announce,
		PublicOnly:        c.P2P.PublicOnly,
		Network:           s.NetworkID(),
		Run:               s.Run,
		Bootstrap:         boot,
		Cached:            cached,
		DHTMode:           c.P2P.DHTMode,
		ConnLow:           c.P2P.ConnLow,
		ConnHigh:          c.P2P.ConnHigh,
		ColocationPenalty: c.P2P.ColocationPenalty,
		ForwardHold:       forwardHold(c.P2P.ForwardHoldMS),
		Topics:            topicsOf(n.role),
		PeerExchange:      n.role == configs.RoleBootstrap,
		AutoNAT:           c.P2P.AutoNAT,
		NATService:        c.P2P.NATService,
		HolePunching:      c.P2P.HolePunching,
		RelayClient:       c.P2P.RelayClient,
		RelayService:      relayLimits(c.P2P.NATConfig),
		AppScore:          appScore,
		ForceReachability: cmp.Or(n.opts.reachability, c.P2P.Reachability),
		Gater:             n.opts.gater,
		Logger:            n.log,
		Registerer:        reg,
	}, nil
}

// forwardHold is p2p.forward_hold_ms as the host's ForwardHold: 0 its default, negative
// none.
func forwardHold(ms int) time.Duration {
	if ms < 0 {
		return -1
	}
	return time.Duration(ms) * time.Millisecond
}

// topicsOf is the topics a node of the role joins: all of them on a node; on a bootstrap
// node all but the shards. A bootstrap node's part in gossip is peer exchange, which any
// topic carries (a prune names other peers of the topic, whom the pruned peer dials, and
// with them it meets on every topic). Were it on the shards topic, every node's flood
// publish would send it the node's contribution: one more copy of each contribution a
// round (a sixteenth of the shard bytes in a swarm of 16), and an operator serving N
// nodes would take in N contributions a round and forward them, for no one's training.
func topicsOf(role string) []string {
	if role == configs.RoleBootstrap {
		return slices.DeleteFunc(slices.Clone(p2p.Kinds), func(k string) bool { return k == p2p.KindShards })
	}
	return p2p.Kinds
}

// relayLimits are the relay service's limits from config, nil with the service off.
func relayLimits(c configs.NATConfig) *p2p.RelayLimits {
	if !c.RelayService {
		return nil
	}
	return &p2p.RelayLimits{Reservations: c.RelayReservations, Circuits: c.RelayCircuits,
		Duration: time.Duration(c.RelayCircuitSeconds) * time.Second, Data: c.RelayCircuitBytes}
}

// Run serves, and on a node trains, until ctx is cancelled or training fails, then closes
// the node and returns.
func (n *Node) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	failed := make(chan error, 1)
	if n.train != nil {
		if err := n.subscribe(ctx); err != nil {
			n.Close()
			return err
		}
		if err := n.joinRun(ctx); err != nil {
			n.Close()
			return err
		}
		go func() { failed <- n.runTraining(ctx) }()
	}
	provided := make(chan struct{}) // the loop announcing checkpoints has stopped
	go func() {
		defer close(provided)
		if n.train != nil {
			n.provideLoop(ctx)
		}
	}()
	t := time.NewTicker(peerCacheInterval)
	defer t.Stop()
	lastPeers := -1
	for {
		select {
		case <-ctx.Done():
			n.savePeers()
			<-provided
			n.stopTraining(failed)
			return n.Close()
		case err := <-failed:
			n.savePeers()
			cancel()
			<-provided
			n.waitSave()
			if err != nil {
				err = fmt.Errorf("training stopped: %w", err)
			}
			return errors.Join(err, n.Close())
		case <-t.C:
			n.savePeers()
			if p := len(n.host.Peers()); p != lastPeers {
				n.log.Info("peers", "connected", p, "dht_table", n.host.RoutingTableSize())
				lastPeers = p
			}
		}
	}
}

// stopTraining waits, before the store closes, for the round loop to return after its
// context ended (failed carries its result) and for a local state being saved to be
// written; at most stopWait, then it logs and goes on.
func (n *Node) stopTraining(failed <-chan error) {
	if n.train == nil {
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := <-failed; err != nil && !errors.Is(err, context.Canceled) {
			n.log.Warn("training stopped", "err", err)
		}
		n.waitSave()
	}()
	select {
	case <-done:
	case <-time.After(stopWait):
		n.log.Warn("the round loop did not stop in time: closing the store under it", "waited", stopWait)
	}
}

// waitSave waits for a local state being saved (saveLocal) to be written.
func (n *Node) waitSave() {
	if n.train != nil {
		n.train.saving.Lock()
		n.train.saving.Unlock() // held only to wait for the save in flight
	}
}

// stopWait bounds how long a stopping node waits for its round loop and a local state save.
const stopWait = 30 * time.Second

func (n *Node) savePeers() {
	if err := savePeerCache(n.opts.Home.PeersPath(), n.host.ID(), n.host.KnownPeers(), n.rng); err != nil {
		n.log.Warn("saving the peers cache", "err", err)
	}
}

// Close stops the API and the host. It is safe to call more than once.
func (n *Node) Close() error {
	n.closeOnce.Do(func() {
		var errs []error
		if n.api != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			errs = append(errs, n.api.Close(ctx))
			cancel()
			if err := os.Remove(n.opts.Home.APIAddrPath()); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
		if n.checks != nil {
			n.checks.close()
		}
		if n.host != nil {
			errs = append(errs, n.host.Close())
		}
		if n.ledger != nil {
			errs = append(errs, n.ledger.close())
		}
		n.closeErr = errors.Join(errs...)
	})
	return n.closeErr
}

// APIAddr is the local HTTP API's host:port.
func (n *Node) APIAddr() string { return n.api.Addr() }

// ID is the node's peer ID.
func (n *Node) ID() peer.ID { return n.host.ID() }

// Status implements source.
func (n *Node) Status() Status {
	return Status{
		PeerID:         n.host.ID().String(),
		Role:           n.role,
		Network:        n.network,
		Run:            n.opts.Spec.Run,
		Addresses:      addrStrings(n.host.Addrs()),
		ConnectedPeers: len(n.host.ConnectedPeers()),
		DHTTableSize:   n.host.RoutingTableSize(),
		Topics:         n.host.Topics(),
		UptimeSeconds:  time.Since(n.started).Seconds(),
		Version:        n.opts.Version,
		Training:       n.trainingStatus(),
		Agreement:      n.agreementStatus(),
		Join:           n.joinStatus.Load(),
	}
}

// agreementStatus is GET /status's agreement object; nil on a bootstrap node.
func (n *Node) agreementStatus() *AgreementStatus {
	if n.train == nil {
		return nil
	}
	st := agreementStatus(n.train.loop.Agreement())
	st.Resyncs, st.LastResync = int(n.resyncs.Load()), n.lastResync.Load()
	return st
}

// trainingStatus is GET /status's training object; nil on a bootstrap node.
func (n *Node) trainingStatus() *TrainingStatus {
	if n.train == nil {
		return nil
	}
	return n.train.prog.status()
}

// Peers implements source.
func (n *Node) Peers() []Peer {
	ps := n.host.Peers()
	out := make([]Peer, 0, len(ps))
	for _, p := range ps {
		out = append(out, Peer{ID: p.ID.String(), Addresses: p.Addrs, LatencyMS: float64(p.Latency.Microseconds()) / 1000})
	}
	return out
}

// newRand returns a generator seeded from the operating system, so that other peers
// cannot predict which of them the node keeps.
func newRand() *rand.Rand {
	var seed [32]byte
	_, _ = crand.Read(seed[:]) // never fails on supported platforms
	return rand.New(rand.NewChaCha8(seed))
}

func addrStrings(as []ma.Multiaddr) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.String()
	}
	return out
}

func parsePeerAddrs(ss []string) ([]peer.AddrInfo, error) {
	var out []peer.AddrInfo
	for _, s := range ss {
		a, err := ma.NewMultiaddr(s)
		if err != nil {
			return nil, fmt.Errorf("bootstrap address %q is not a multiaddr: %w", s, err)
		}
		ai, err := peer.AddrInfoFromP2pAddr(a)
		if err != nil {
			return nil, fmt.Errorf("bootstrap address %q: %w", s, err)
		}
		out = append(out, *ai)
	}
	return out, nil
}
