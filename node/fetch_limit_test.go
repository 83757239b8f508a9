package node

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// TestFetchOverBudgetRefusedOtherPeersServed: a peer that sends more requests than its
// burst has the rest refused (the stream is reset) and counted, while another peer is
// still served; a request that reads a stored round costs more; the bucket refills.
func TestFetchOverBudgetRefusedOtherPeersServed(t *testing.T) {
	refused := 0
	clock := time.Unix(1_000_000, 0)
	srv := &fetchServer{records: newRecordBook(1 << 20)}
	srv.limits = newFetchLimits(func() { refused++ })
	srv.limits.now = func() time.Time { return clock }
	req := recordRequest(3, testPeerID(t)).marshal()
	flooder, other := peer.ID("flooder"), peer.ID("other")
	served := 0
	for range fetchBurst + 50 {
		if _, err := srv.handle(context.Background(), flooder, req); err == nil {
			served++
		} else if !errors.Is(err, errFetchRateLimited) {
			t.Fatalf("flooder: %v", err)
		}
	}
	if served != fetchBurst || refused != 50 {
		t.Fatalf("flooder served %d and refused %d of %d requests, want %d and 50", served, refused, fetchBurst+50, fetchBurst)
	}
	if _, err := srv.handle(context.Background(), other, req); err != nil {
		t.Fatalf("another peer refused: %v", err)
	}
	clock = clock.Add(time.Second) // fetchRate tokens back
	if !srv.limits.allow(flooder, fetchStoredShard) {
		t.Fatal("a heavy request refused after a second of refill")
	}
	n := 1
	for srv.limits.allow(flooder, fetchCommitted) {
		n++
	}
	if want := fetchRate / fetchCostHeavy; n != want {
		t.Fatalf("%d heavy requests fit a second's refill of %d tokens, want %d", n, fetchRate, want)
	}
}
