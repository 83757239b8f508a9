package node

import (
	"encoding/binary"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/lowband/lowband/p2p/p2ptest"
)

// groundID is an Ed25519 peer ID whose key starts with zero bytes: what an attacker
// gets by grinding keys for IDs that sort first.
func groundID(i int) peer.ID {
	b := []byte{0x00, 0x24, 0x08, 0x01, 0x12, 0x20} // identity multihash of a protobuf Ed25519 key
	key := make([]byte, 32)
	binary.BigEndian.PutUint32(key[4:], uint32(i))
	return peer.ID(append(b, key...))
}

// TestPeerCacheGroundIDsGetTheirShare: 10,000 ground low IDs and 256 honest peers;
// the saved cache must hold honest peers in about their share (256/10,256 of 256 is
// 6.4), not the 256 lowest-sorting IDs.
func TestPeerCacheGroundIDsGetTheirShare(t *testing.T) {
	addr := ma.StringCast("/ip4/127.0.0.1/tcp/4001")
	var peers []peer.AddrInfo
	honest := map[peer.ID]bool{}
	for range maxCachedPeers {
		id, err := peer.IDFromPrivateKey(p2ptest.Key())
		if err != nil {
			t.Fatal(err)
		}
		honest[id] = true
		peers = append(peers, peer.AddrInfo{ID: id, Addrs: []ma.Multiaddr{addr}})
	}
	for i := range 10_000 {
		peers = append(peers, peer.AddrInfo{ID: groundID(i), Addrs: []ma.Multiaddr{addr}})
	}
	slices.SortFunc(peers, func(a, b peer.AddrInfo) int { return strings.Compare(string(a.ID), string(b.ID)) }) // as KnownPeers returns them
	// Over 20 seeds the honest peers hold 20*6.4 = 128 places on average (standard
	// deviation about 11).
	path := filepath.Join(t.TempDir(), "peers.json")
	total := 0
	for seed := range uint64(20) {
		if err := savePeerCache(path, "", peers, rand.New(rand.NewPCG(seed, 1))); err != nil {
			t.Fatal(err)
		}
		got, err := loadPeerCache(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != maxCachedPeers {
			t.Fatalf("cache holds %d peers, want %d", len(got), maxCachedPeers)
		}
		for _, p := range got {
			if honest[p.ID] {
				total++
			}
		}
	}
	if total < 90 || total > 170 {
		t.Fatalf("honest peers held %d places over 20 saves, want about 128", total)
	}
}
