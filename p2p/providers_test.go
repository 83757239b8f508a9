package p2p_test

import (
	"context"
	"crypto/sha256"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/p2p/p2ptest"
)

// A key one host provides is found by another through the DHT, naming that host and not
// the finder; a key nobody provides finds nobody.
func TestProvideThenFindProviders(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := p2ptest.Start(ctx, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := p2ptest.Poll(ctx, "full routing tables", 50*time.Millisecond, func() bool { return p2ptest.InTables(s.All()) }); err != nil {
		t.Fatal(err)
	}
	key := sha256.Sum256([]byte("a checkpoint manifest"))
	provider, finder := s.Hosts[0], s.Hosts[2]
	if err := provider.Provide(ctx, key); err != nil {
		t.Fatal(err)
	}
	found, err := finder.FindProviders(ctx, key, 4)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(found, []peer.ID{provider.ID()}) {
		t.Fatalf("found %v, want %v", found, provider.ID())
	}
	short, cancelShort := context.WithTimeout(ctx, 2*time.Second)
	defer cancelShort()
	if none, _ := finder.FindProviders(short, sha256.Sum256([]byte("nobody")), 4); len(none) != 0 {
		t.Fatalf("found %v for a key nobody provides", none)
	}
}
