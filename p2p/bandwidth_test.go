package p2p_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/p2p/p2ptest"
)

// TestBandwidthExactWithoutWaiting: a 64 KiB gossip message shows in the receiver's
// received bytes as soon as it has been read, and in the sender's sent bytes as soon as
// its write returned, with no wait for libp2p's meters to be swept (they move what was
// marked into their totals about once a second, so a short round read zero bytes).
func TestBandwidthExactWithoutWaiting(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := p2ptest.Start(ctx, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a, b := s.Boot, s.Hosts[0]
	sub, err := b.Subscribe(p2p.KindRecords)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Cancel()
	if err := p2ptest.Poll(ctx, "topic peer", 10*time.Millisecond, func() bool {
		return len(a.TopicPeers(p2p.KindRecords)) == 1
	}); err != nil {
		t.Fatal(err)
	}
	const size = 64 << 10
	for i := range 3 {
		sent0, _ := a.Bandwidth()
		_, recv0 := b.Bandwidth()
		if err := a.Publish(ctx, p2p.KindRecords, bytes.Repeat([]byte{byte(i)}, size)); err != nil {
			t.Fatal(err)
		}
		if _, err := sub.Next(ctx); err != nil {
			t.Fatal(err)
		}
		_, recv := b.Bandwidth()
		// The sender counts its bytes once its write returns, which may come a moment
		// after the receiver has read them: well within the meters' second.
		var sent int64
		deadline := time.Now().Add(200 * time.Millisecond)
		for sent, _ = a.Bandwidth(); sent-sent0 < size && time.Now().Before(deadline); sent, _ = a.Bandwidth() {
			time.Sleep(5 * time.Millisecond)
		}
		if sent-sent0 < size || recv-recv0 < size {
			t.Fatalf("message %d: sent %d, received %d more bytes at once for a %d-byte message", i, sent-sent0, recv-recv0, size)
		}
	}
}
