package node

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/p2p/p2ptest"
	"github.com/lowband/lowband/verify"
)

// wirePublish records what a node publishes, from any goroutine.
type wirePublish struct {
	mu   sync.Mutex
	sent [][]byte
}

func (w *wirePublish) publish(_ context.Context, kind string, data []byte) error {
	if kind == p2p.KindShards {
		w.mu.Lock()
		w.sent = append(w.sent, data)
		w.mu.Unlock()
	}
	return nil
}

// wait returns what was sent once it is n shards (or after a second, what there is).
func (w *wirePublish) wait(n int) [][]byte {
	for deadline := time.Now().Add(time.Second); ; time.Sleep(time.Millisecond) {
		w.mu.Lock()
		out := append([][]byte(nil), w.sent...)
		w.mu.Unlock()
		if len(out) >= n || time.Now().After(deadline) {
			return out
		}
	}
}

// victimShards is another peer's contribution to round r: its payloads changed from the
// fixture's own (so that a copy is told from the node's own work), in its slots, signed
// by its epoch key.
func victimShards(t *testing.T, f *advFixture, r uint64) (string, [][]byte) {
	t.Helper()
	key := p2ptest.Key()
	id, _ := peer.IDFromPrivateKey(key)
	sg, err := simSigner(t, syntheticSpec(t, nil), key)(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, d := range f.shards {
		s, err := verify.UnmarshalShard(d, f.a.max)
		if err != nil {
			t.Fatal(err)
		}
		payload, err := variantPayload(s.Payload)
		if err != nil {
			t.Fatal(err)
		}
		h := s.Header
		h.Round, h.Peer, h.BundleHash = r, id.String(), sg.BundleHash[:]
		v, err := verify.SignShard(sg.Key, h, payload)
		if err != nil {
			t.Fatal(err)
		}
		b, err := v.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return id.String(), out
}

// checkCopy fails unless sent is a copy of victim's shards under the fixture's name and key.
func checkCopy(t *testing.T, f *advFixture, sent, victim [][]byte) {
	t.Helper()
	if len(sent) != len(victim) {
		t.Fatalf("sent %d shards for a victim's %d", len(sent), len(victim))
	}
	for i, d := range sent {
		s, err := verify.UnmarshalShard(d, f.a.max)
		if err != nil {
			t.Fatal(err)
		}
		v, _ := verify.UnmarshalShard(victim[i], f.a.max)
		own, _ := verify.UnmarshalShard(f.shards[0], f.a.max)
		f.signedBySigner(t, s)
		switch {
		case s.Header.Peer != f.a.self || !bytes.Equal(s.Header.BundleHash, own.Header.BundleHash):
			t.Fatalf("shard %d is not under the copier's name and bundle: %+v", i, s.Header)
		case s.Header.Round != v.Header.Round || s.Header.Index != v.Header.Index || s.Header.Count != v.Header.Count:
			t.Fatalf("shard %d: slot %d/%d of round %d, the victim's %d/%d of round %d", i, s.Header.Index, s.Header.Count, s.Header.Round, v.Header.Index, v.Header.Count, v.Header.Round)
		case !bytes.Equal(s.Payload, v.Payload) || !bytes.Equal(s.Header.PayloadCID, v.Header.PayloadCID):
			t.Fatalf("shard %d does not carry the victim's payload", i)
		case bytes.Equal(s.Payload, own.Payload):
			t.Fatalf("shard %d carries the node's own payload", i)
		case !f.a.crafted(d):
			t.Fatal("its own validators would refuse the copy")
		}
	}
}

// TestAdversaryCopySendsAnotherPeersContribution: a free-ride-copy node sends none of its
// own shards; once another peer's contribution to the round is complete (before or after
// its own work is done) it sends that contribution's payloads, in the same slots, signed
// by its own epoch key under its own name; a round still waiting when it publishes the
// round after the next gets nothing, even when a contribution to it comes later.
func TestAdversaryCopySendsAnotherPeersContribution(t *testing.T) {
	t.Run("victim after", func(t *testing.T) {
		f := newAdvFixture(t, AdvCopy, nil)
		var w wirePublish
		for _, d := range f.shards {
			if err := f.a.publish(context.Background(), w.publish, p2p.KindShards, d); err != nil {
				t.Fatal(err)
			}
		}
		if sent := w.wait(0); len(sent) != 0 {
			t.Fatalf("sent %d shards before any peer's", len(sent))
		}
		_, victim := victimShards(t, f, 0)
		for _, d := range victim {
			f.a.observe(d)
		}
		checkCopy(t, f, w.wait(len(victim)), victim)
		for _, d := range victim { // seen again: sent once
			f.a.observe(d)
		}
		if sent := w.wait(len(victim) + 1); len(sent) != len(victim) {
			t.Fatalf("sent %d shards, want the copy once", len(sent))
		}
	})
	t.Run("victim before", func(t *testing.T) {
		f := newAdvFixture(t, AdvCopy, nil)
		var w wirePublish
		_, victim := victimShards(t, f, 0)
		for _, d := range victim {
			f.a.observe(d)
		}
		for _, d := range f.shards {
			if err := f.a.publish(context.Background(), w.publish, p2p.KindShards, d); err != nil {
				t.Fatal(err)
			}
		}
		checkCopy(t, f, w.wait(len(victim)), victim)
	})
	t.Run("given up", func(t *testing.T) {
		f := newAdvFixture(t, AdvCopy, nil)
		var w wirePublish
		for _, r := range []uint64{0, 2} {
			if err := f.a.publish(context.Background(), w.publish, p2p.KindShards, rerounded(t, f, f.shards[0], r)); err != nil {
				t.Fatal(err)
			}
		}
		_, victim := victimShards(t, f, 0)
		for _, d := range victim {
			f.a.observe(d)
		}
		if sent := w.wait(1); len(sent) != 0 {
			t.Fatalf("sent %d shards for a round given up", len(sent))
		}
		if len(f.a.copy.seen) != 0 || len(f.a.copy.pending) != 1 {
			t.Fatalf("holds %d rounds of others' shards and %d of its own", len(f.a.copy.seen), len(f.a.copy.pending))
		}
	})
}
