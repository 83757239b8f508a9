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
}

// All returns the bootstrap host followed by the others.
func (s *Swarm) All() []*p2p.Host { return append([]*p2p.Host{s.Boot}, s.Hosts...) }

// Start starts a bootstrap host (peer exchange on) and n hosts that know only the
// bootstrap's address. mutate, if not nil, edits each config before the host
// starts (i = -1 for the bootstrap). On error the hosts started so far are closed.
func Start(ctx context.Context, n int, mutate func(i int, c *p2p.Config)) (*Swarm, error) {
	cfg := Config(Key())
	cfg.PeerExchange = true
	if mutate != nil {
		mutate(-1, &cfg)
	}
	boot, err := p2p.New(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("starting bootstrap: %w", err)
	}
	s := &Swarm{Boot: boot}
	for i := range n {
		c := Config(Key())
		c.Bootstrap = []peer.AddrInfo{boot.AddrInfo()}
		if mutate != nil {
			mutate(i, &c)
		}
		h, err := p2p.New(ctx, c)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("starting host %d: %w", i, err)
		}
		s.Hosts = append(s.Hosts, h)
	}
	return s, nil
}

// Close closes every host, in parallel.
func (s *Swarm) Close() error {
	all := s.All()
	errs := make([]error, len(all))
	var wg sync.WaitGroup
	for i, h := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = h.Close()
		}()
	}
	wg.Wait()
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
