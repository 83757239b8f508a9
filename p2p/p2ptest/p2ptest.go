// Package p2ptest starts swarms of p2p hosts on loopback in one process, for
// tests and benchmarks, and holds small helpers for polling conditions.
package p2ptest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/p2p"
)

// Network and Run name the swarms these helpers start.
const (
	Network = "test-0000"
	Run     = "run-0"
)

// Key makes a fresh Ed25519 identity.
func Key() crypto.PrivKey {
	k, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		panic(fmt.Sprintf("generating key: %v", err)) // crypto/rand does not fail
	}
	return k
}

// Config is a local-profile host: loopback TCP on a free port, DHT server, no
// colocation penalty, every topic kind joined with an accept-all validator, fast
// retries. Swarms use TCP by
// default because all their hosts share one process's CPU, and QUIC's userspace
// packet handling makes a swarm of dozens CPU-bound; set Listen to ListenQUIC or
// ListenBoth to run them over QUIC.
func Config(key crypto.PrivKey) p2p.Config {
	return p2p.Config{
		Identity:   key,
		Listen:     ListenTCP,
		Network:    Network,
		Run:        Run,
		DHTMode:    p2p.DHTServer,
		Topics:     p2p.Kinds,
		Validators: AcceptAll(),
		RetryMin:   100 * time.Millisecond,
		RetryMax:   2 * time.Second,
		Logger:     slog.New(slog.DiscardHandler),
	}
}

// AcceptAll returns a validator for every topic kind that accepts any bytes: for
// tests and benchmarks that move opaque payloads.
func AcceptAll() map[string]p2p.Validator {
	m := make(map[string]p2p.Validator, len(p2p.Kinds))
	for _, k := range p2p.Kinds {
		m[k] = func(context.Context, peer.ID, []byte) p2p.Result { return p2p.Accept }
	}
	return m
}

// Swarm is a bootstrap host and the hosts that joined through it.
type Swarm struct {
	Boot  *p2p.Host
	Hosts []*p2p.Host
	mem   *MemNet // the in-memory network of a "mem" swarm; nil otherwise
}

// All returns the bootstrap host followed by the others.
func (s *Swarm) All() []*p2p.Host { return append([]*p2p.Host{s.Boot}, s.Hosts...) }

// Start starts a bootstrap host (peer exchange on) and n hosts that know only the
// bootstrap's address, on loopback TCP; the n hosts start in parallel. mutate, if not
// nil, edits each config before the host starts (i = -1 for the bootstrap); it is
// called from several goroutines at once, each with its own i and config. On error the hosts started so
// far are closed.
func Start(ctx context.Context, n int, mutate func(i int, c *p2p.Config)) (*Swarm, error) {
	s := &Swarm{}
	return s, s.start(ctx, n, mutate, nil)
}

// Transports are the networks StartOn can run a swarm on: loopback TCP, QUIC or
// both, or "mem", go-libp2p's in-memory mocknet, which needs no socket or file
// descriptor (and has neither connection nor resource manager), for swarms larger
// than the sockets of one machine allow.
var Transports = []string{"tcp", "quic", "both", "mem"}

// StartOn is Start on one of Transports.
func StartOn(ctx context.Context, transport string, n int, mutate func(i int, c *p2p.Config)) (*Swarm, error) {
	return StartOnThen(ctx, transport, n, mutate, nil)
}

// StartOnThen is StartOn, and calls started, when not nil, with each of the n hosts
// as soon as it has started, from the goroutine that started it (so concurrently for
// different hosts): for what a node does at its own start, such as subscribing to its
// topics. An error from started fails the start.
func StartOnThen(ctx context.Context, transport string, n int, mutate func(i int, c *p2p.Config), started func(i int, h *p2p.Host) error) (*Swarm, error) {
	if transport == "mem" {
		s := &Swarm{mem: NewMemNet()}
		return s, s.start(ctx, n, mutate, started)
	}
	listen, err := Listen(transport)
	if err != nil {
		return nil, err
	}
	s := &Swarm{}
	return s, s.start(ctx, n, func(i int, c *p2p.Config) {
		c.Listen = listen
		if mutate != nil {
			mutate(i, c)
		}
	}, started)
}

func (s *Swarm) start(ctx context.Context, n int, mutate func(i int, c *p2p.Config), started func(i int, h *p2p.Host) error) error {
	cfg := Config(Key())
	cfg.PeerExchange = true
	if mutate != nil {
		mutate(-1, &cfg)
	}
	boot, err := s.newHost(ctx, cfg)
	if err != nil {
		s.Close()
		return fmt.Errorf("starting bootstrap: %w", err)
	}
	s.Boot = boot
	// The hosts start in parallel, as nodes do: started one after another, each
	// waited its turn for the CPU with every host already running (at 200
	// in-memory hosts on a loaded machine, the last started after 80 s).
	s.Hosts = make([]*p2p.Host, n)
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(n, startParallel) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				c := Config(Key())
				c.Bootstrap = []peer.AddrInfo{boot.AddrInfo()}
				if mutate != nil {
					mutate(i, &c)
				}
				h, err := s.newHost(ctx, c)
				if err != nil {
					errs[i] = fmt.Errorf("starting host %d: %w", i, err)
					continue
				}
				s.Hosts[i] = h
				if started != nil {
					if err := started(i, h); err != nil {
						errs[i] = fmt.Errorf("host %d: %w", i, err)
					}
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		s.Hosts = slices.DeleteFunc(s.Hosts, func(h *p2p.Host) bool { return h == nil })
		s.Close()
		return err
	}
	return nil
}

// startParallel is how many hosts a swarm starts at once.
const startParallel = 8

// newHost starts a host; on a mem swarm it first adds the host to the in-memory
// network, linked to every host there.
func (s *Swarm) newHost(ctx context.Context, c p2p.Config) (*p2p.Host, error) {
	if s.mem == nil {
		return p2p.New(ctx, c)
	}
	if err := s.mem.Attach(&c); err != nil {
		return nil, err
	}
	h, err := p2p.New(ctx, c)
	if err != nil {
		_ = c.Libp2p.Close()
	}
	return h, err
}

// Close closes every host, in parallel, and the in-memory network if any.
func (s *Swarm) Close() error {
	var all []*p2p.Host
	if s.Boot != nil {
		all = s.All()
	} else {
		all = s.Hosts
	}
	errs := make([]error, len(all)+1)
	var wg sync.WaitGroup
	for i, h := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = h.Close()
		}()
	}
	wg.Wait()
	if s.mem != nil {
		errs[len(all)] = s.mem.Close()
	}
	return errors.Join(errs...)
}

// Known is what a host has found of the network: its connected peers and its
// routing table, sorted and without duplicates.
func Known(h *p2p.Host) []peer.ID {
	ids := append(h.ConnectedPeers(), h.RoutingTable()...)
	slices.Sort(ids)
	return slices.Compact(ids)
}

// FoundAll reports whether every host knows (Known) every other host.
func FoundAll(hosts []*p2p.Host) bool {
	for _, h := range hosts {
		if Missing(h, hosts) > 0 {
			return false
		}
	}
	return true
}

// Missing counts the hosts among others (other than h) that h does not know.
func Missing(h *p2p.Host, others []*p2p.Host) int {
	known := Known(h)
	n := 0
	for _, o := range others {
		if o.ID() != h.ID() {
			if _, ok := slices.BinarySearch(known, o.ID()); !ok {
				n++
			}
		}
	}
	return n
}

// InTables reports whether every host's DHT routing table holds every other host.
func InTables(hosts []*p2p.Host) bool {
	for _, h := range hosts {
		table := h.RoutingTable()
		for _, o := range hosts {
			if _, ok := slices.BinarySearch(table, o.ID()); !ok && o.ID() != h.ID() {
				return false
			}
		}
	}
	return true
}

// Poll calls cond every interval until it returns true (nil) or ctx ends (an
// error naming what was awaited).
func Poll(ctx context.Context, what string, interval time.Duration, cond func() bool) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if cond() {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-t.C:
		}
	}
}

// Loopback listen addresses on free ports, by transport.
var (
	ListenTCP  = []string{"/ip4/127.0.0.1/tcp/0"}
	ListenQUIC = []string{"/ip4/127.0.0.1/udp/0/quic-v1"}
	ListenBoth = []string{"/ip4/127.0.0.1/tcp/0", "/ip4/127.0.0.1/udp/0/quic-v1"}
)

// Listen returns the listen addresses for a transport name: "tcp", "quic" or "both".
func Listen(transport string) ([]string, error) {
	switch transport {
	case "tcp":
		return ListenTCP, nil
	case "quic":
		return ListenQUIC, nil
	case "both":
		return ListenBoth, nil
	}
	return nil, fmt.Errorf("unknown transport %q (want tcp, quic or both)", transport)
}
