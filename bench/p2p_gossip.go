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
)

// GossipOptions configures RunGossip.
type GossipOptions struct {
	Nodes    int           // hosts, the bootstrap included
	Size     int           // payload bytes per message, at most p2p.MaxMessageSize
	Messages int           // messages published, one at a time, from hosts spread over the swarm
	Wait     time.Duration // how long one message may take to reach everyone
	Timeout  time.Duration // bound on forming the swarm
	// Transport is one of p2ptest.Transports: loopback sockets or the in-memory mocknet.
	Transport string
}

// GossipResult is what RunGossip measures. Latencies pool every (message,
// receiver) pair: the time from the start of Publish until the receiver's
// subscription delivers the message. The receivers are the subscribed hosts: all
// but the bootstrap, which relays.
type GossipResult struct {
	Formation
	SizeBytes         int     `json:"size_bytes"`
	Messages          int     `json:"messages"`
	DeliveredFraction float64 `json:"delivered_fraction"`
	P50S              float64 `json:"p50_s"`
	P99S              float64 `json:"p99_s"`
	MaxS              float64 `json:"max_s"`
}

// RunGossip forms a swarm (see Formation), then publishes Messages messages of Size
// random bytes on the shards topic one after another, each from a different host,
// and records when each other host receives each.
func RunGossip(ctx context.Context, o GossipOptions) (GossipResult, error) {
	res := GossipResult{Formation: Formation{Nodes: o.Nodes, Transport: o.Transport}, SizeBytes: o.Size, Messages: o.Messages}
	switch {
	case o.Size < 8 || o.Size > p2p.MaxMessageSize:
		return res, fmt.Errorf("size %d outside 8..%d bytes (the gossip cap)", o.Size, p2p.MaxMessageSize)
	case o.Messages < 1:
		return res, fmt.Errorf("need at least 1 message, got %d", o.Messages)
	}
	sctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	sw, form, err := formSwarm(sctx, o.Nodes, o.Transport)
	res.Formation = form
	if err != nil {
		return res, err
	}
	defer sw.close()
	rec := newRecorder(sw, o.Messages)
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	rec.start(rctx)
	hosts := sw.s.Hosts
	for k := range o.Messages {
		from := hosts[(k*len(hosts)/o.Messages)%len(hosts)] // spread over the swarm
		if err := rec.publish(ctx, from, k, o.Size, o.Wait); err != nil {
			return res, err
		}
	}
	stop()
	rec.wg.Wait()
	lat := rec.latencies()
	res.DeliveredFraction = float64(len(lat)) / float64(o.Messages*(len(hosts)-1))
	if len(lat) > 0 {
		res.P50S, res.P99S, res.MaxS = quantile(lat, 0.5), quantile(lat, 0.99), lat[len(lat)-1]
	}
	return res, nil
}

// recorder notes when each subscribed host receives each message.
type recorder struct {
	hosts []*p2p.Host
	subs  []*p2p.Subscription
	wg    sync.WaitGroup

	mu   sync.Mutex
	sent []time.Time   // by message
	got  [][]time.Time // by message, then host; zero = not received
	cond chan struct{} // signalled on every receipt
}

func newRecorder(sw *swarm, messages int) *recorder {
	rec := &recorder{hosts: sw.s.Hosts, subs: sw.shards, sent: make([]time.Time, messages), got: make([][]time.Time, messages)}
	for k := range rec.got {
		rec.got[k] = make([]time.Time, len(rec.hosts))
	}
	return rec
}

func (r *recorder) start(ctx context.Context) {
	r.cond = make(chan struct{}, 1)
	for i, sub := range r.subs {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
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

// reached returns how many hosts received message k and the longest it took one
// of them, in seconds.
func (r *recorder) reached(k int) (n int, slowest float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range r.got[k] {
		if !t.IsZero() {
			n++
			slowest = max(slowest, t.Sub(r.sent[k]).Seconds())
		}
	}
	return n, slowest
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
