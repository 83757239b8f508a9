package bench

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/p2p/p2ptest"
)

// GossipOptions configures RunGossip.
type GossipOptions struct {
	Nodes    int           // hosts, the bootstrap included
	Size     int           // payload bytes per message, at most p2p.MaxMessageSize
	Messages int           // messages published, one at a time, from hosts spread over the swarm
	Wait     time.Duration // how long one message may take to reach everyone
	Timeout  time.Duration // bound on forming the swarm and mesh
	// Transport is "tcp", "quic" or "both" (loopback listen addresses).
	Transport string
}

// GossipResult is what RunGossip measures. Latencies pool every (message,
// receiver) pair: the time from the start of Publish until the receiver's
// subscription delivers the message.
type GossipResult struct {
	Nodes             int     `json:"nodes"`
	SizeBytes         int     `json:"size_bytes"`
	Messages          int     `json:"messages"`
	DeliveredFraction float64 `json:"delivered_fraction"`
	P50S              float64 `json:"p50_s"`
	P99S              float64 `json:"p99_s"`
	MaxS              float64 `json:"max_s"`
}

// RunGossip forms a swarm on loopback, subscribes every host to the shards topic,
// then publishes Messages messages of Size random bytes one after another, each
// from a different host, and records when each other host receives each.
func RunGossip(ctx context.Context, o GossipOptions) (GossipResult, error) {
	res := GossipResult{Nodes: o.Nodes, SizeBytes: o.Size, Messages: o.Messages}
	switch {
	case o.Nodes < 2:
		return res, fmt.Errorf("need at least 2 nodes, got %d", o.Nodes)
	case o.Size < 8 || o.Size > p2p.MaxMessageSize:
		return res, fmt.Errorf("size %d outside 8..%d bytes (the gossip cap)", o.Size, p2p.MaxMessageSize)
	case o.Messages < 1:
		return res, fmt.Errorf("need at least 1 message, got %d", o.Messages)
	}
	listen, err := p2ptest.Listen(o.Transport)
	if err != nil {
		return res, err
	}
	sctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	s, err := p2ptest.Start(sctx, o.Nodes-1, func(_ int, c *p2p.Config) { c.Listen = listen })
	if err != nil {
		return res, err
	}
	defer s.Close()
	all := s.All()
	rec, err := formMesh(sctx, all, o.Messages)
	if err != nil {
		return res, err
	}
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	rec.start(rctx)
	for k := range o.Messages {
		from := all[(1+k*(len(all)-1)/o.Messages)%len(all)] // spread over the swarm
		if err := rec.publish(ctx, from, k, o.Size, o.Wait); err != nil {
			return res, err
		}
	}
	stop()
	rec.wg.Wait()
	lat := rec.latencies()
	res.DeliveredFraction = float64(len(lat)) / float64(o.Messages*(o.Nodes-1))
	if len(lat) > 0 {
		res.P50S, res.P99S, res.MaxS = quantile(lat, 0.5), quantile(lat, 0.99), lat[len(lat)-1]
	}
	return res, nil
}

// formMesh waits until every host has found every other, subscribes them all and
// waits until each sees every other as a subscriber of the topic.
func formMesh(ctx context.Context, all []*p2p.Host, messages int) (*recorder, error) {
	if err := p2ptest.Poll(ctx, "the swarm to form", pollEvery, func() bool { return p2ptest.FoundAll(all) }); err != nil {
		return nil, err
	}
	rec := &recorder{hosts: all, sent: make([]time.Time, messages), got: make([][]time.Time, messages)}
	for k := range rec.got {
		rec.got[k] = make([]time.Time, len(all))
	}
	for _, h := range all {
		sub, err := h.Subscribe(p2p.KindShards)
		if err != nil {
			return nil, err
		}
		rec.subs = append(rec.subs, sub)
	}
	err := p2ptest.Poll(ctx, "every host to see every subscriber", pollEvery, func() bool {
		for _, h := range all {
			if len(h.TopicPeers(p2p.KindShards)) < len(all)-1 {
				return false
			}
		}
		return true
	})
	return rec, err
}

// recorder notes when each host receives each message.
type recorder struct {
	hosts []*p2p.Host
	subs  []*p2p.Subscription
	wg    sync.WaitGroup

	mu   sync.Mutex
	sent []time.Time   // by message
	got  [][]time.Time // by message, then host; zero = not received
	cond chan struct{} // signalled on every receipt
}

func (r *recorder) start(ctx context.Context) {
	r.cond = make(chan struct{}, 1)
	for i, sub := range r.subs {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			defer sub.Cancel()
			for {
				m, err := sub.Next(ctx)
				if err != nil {
					return
				}
				if m.Local || len(m.Data) < 8 {
					continue
				}
				r.note(i, int(binary.BigEndian.Uint64(m.Data)), time.Now())
			}
		}()
	}
}

func (r *recorder) note(host, k int, at time.Time) {
	r.mu.Lock()
	if k >= 0 && k < len(r.got) && r.got[k][host].IsZero() {
		r.got[k][host] = at
	}
	r.mu.Unlock()
	select {
	case r.cond <- struct{}{}:
	default:
	}
}

// publish sends message k from a host and waits until every other host has it
// or wait passes.
func (r *recorder) publish(ctx context.Context, from *p2p.Host, k, size int, wait time.Duration) error {
	data := make([]byte, size)
	_, _ = rand.Read(data) // distinct content, so a distinct message ID
	binary.BigEndian.PutUint64(data, uint64(k))
	r.mu.Lock()
	r.sent[k] = time.Now()
	r.mu.Unlock()
	if err := from.Publish(ctx, p2p.KindShards, data); err != nil {
		return fmt.Errorf("message %d: %w", k, err)
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for r.received(k) < len(r.hosts)-1 {
		select {
		case <-r.cond:
		case <-deadline.C:
			return nil // counted as undelivered
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func (r *recorder) received(k int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, t := range r.got[k] {
		if !t.IsZero() {
			n++
		}
	}
	return n
}

// latencies returns every delivery's latency in seconds, sorted.
func (r *recorder) latencies() []float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []float64
	for k, row := range r.got {
		for _, t := range row {
			if !t.IsZero() {
				out = append(out, t.Sub(r.sent[k]).Seconds())
			}
		}
	}
	slices.Sort(out)
	return out
}

// quantile is the nearest-rank q-quantile of sorted values.
func quantile(sorted []float64, q float64) float64 {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}
