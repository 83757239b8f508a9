package verify

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	cmp "github.com/lowband/lowband/training/compress"
)

// testHeaderPeer is the canonical peer ID of testIdentity(9).
var testHeaderPeer = func() string {
	id, err := peer.IDFromPrivateKey(testIdentity(9))
	if err != nil {
		panic(err)
	}
	return id.String()
}()

func testHeader() ShardHeader {
	return ShardHeader{Network: "testnet-1a2b3c4d", Run: "run-1", Round: 42, Peer: testHeaderPeer,
		Index: 1, Count: 3, BundleHash: bytes.Repeat([]byte{7}, 32)}
}

// TestShardHeaderPeerNotCanonicalRefused: a header names its peer in the one canonical
// form; the CIDv1 form of the same peer, or a string that is no peer ID, is malformed.
func TestShardHeaderPeerNotCanonicalRefused(t *testing.T) {
	id, _ := peer.Decode(testHeaderPeer)
	for _, p := range []string{peer.ToCid(id).String(), "12D3KooWpeer"} {
		h := testHeader()
		h.Peer = p
		if _, err := SignShard(testKey(3), h, []byte("x")); ClassOf(err) != ClassMalformed {
			t.Errorf("peer %q: %v, want malformed", p, err)
		}
	}
}

// TestShardHeaderCountBounded: no header claims more shards than a message can have.
func TestShardHeaderCountBounded(t *testing.T) {
	h := testHeader()
	h.Index, h.Count = MaxShardCount-1, MaxShardCount
	if _, err := SignShard(testKey(3), h, []byte("x")); err != nil {
		t.Fatalf("count at the bound: %v", err)
	}
	h.Index, h.Count = 0, MaxShardCount+1
	if _, err := SignShard(testKey(3), h, []byte("x")); ClassOf(err) != ClassMalformed {
		t.Fatalf("count %d: %v, want malformed", h.Count, err)
	}
	// The bound covers the most shards compress can cut a message it accepts into: every
	// element as a raw float64, shards of the minimum size less their envelope.
	most := cmp.DefaultLimits.MaxElements*8/(cmp.MinShardBytes-64) + cmp.DefaultLimits.MaxTensors
	if most > MaxShardCount {
		t.Fatalf("a message can have about %d shards, more than MaxShardCount %d", most, MaxShardCount)
	}
}

func TestShardSignAndCheck(t *testing.T) {
	key := testKey(3)
	pub := key.Public().(ed25519.PublicKey)
	payload := []byte("compressed gradient bytes")
	s, err := SignShard(key, testHeader(), payload)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(s.Header.PayloadCID, PayloadCID(payload)) || s.Header.PayloadCID[1] != 0x55 {
		t.Fatalf("payload CID %x", s.Header.PayloadCID)
	}
	enc, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	got, err := UnmarshalShard(enc, 1024)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckShardSignature(got, pub); err != nil {
		t.Fatalf("genuine shard: %v", err)
	}

	// Another key.
	wantClass(t, CheckShardSignature(got, testKey(4).Public().(ed25519.PublicKey)), ClassBadSignature)
	// Each header field is covered.
	for name, change := range map[string]func(h *ShardHeader){
		"network": func(h *ShardHeader) { h.Network = "othernet" },
		"run":     func(h *ShardHeader) { h.Run = "run-2" },
		"round":   func(h *ShardHeader) { h.Round++ },
		"peer":    func(h *ShardHeader) { h.Peer = testPeer(t, 10).String() },
		"index":   func(h *ShardHeader) { h.Index = 2 },
		"count":   func(h *ShardHeader) { h.Count = 4 },
		"bundle":  func(h *ShardHeader) { h.BundleHash = bytes.Repeat([]byte{8}, 32) },
	} {
		c := *got
		change(&c.Header)
		if ClassOf(CheckShardSignature(&c, pub)) != ClassBadSignature {
			t.Errorf("changed %s still verifies", name)
		}
	}
	// The payload is bound through its CID.
	c := *got
	c.Payload = []byte("other bytes")
	err = CheckShardSignature(&c, pub)
	if ClassOf(err) != ClassBadSignature || !errors.Is(err, ErrPayloadMismatch) {
		t.Fatalf("changed payload: %v", err)
	}
}

// A signature made over the same bytes in another domain does not verify as a shard.
func TestShardDomainSeparation(t *testing.T) {
	key := testKey(3)
	s, err := SignShard(key, testHeader(), []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	enc, err := encMode.Marshal(&s.Header)
	if err != nil {
		t.Fatal(err)
	}
	s.Sig = ed25519.Sign(key, enc) // no domain tag
	wantClass(t, CheckShardSignature(s, key.Public().(ed25519.PublicKey)), ClassBadSignature)
}

func TestUnmarshalShardRefuses(t *testing.T) {
	s, err := SignShard(testKey(3), testHeader(), bytes.Repeat([]byte{1}, 100))
	if err != nil {
		t.Fatal(err)
	}
	enc, _ := s.Marshal()
	badIndex := *s
	badIndex.Header.Index = 3
	badIndexEnc, _ := encMode.Marshal(&badIndex)
	for name, data := range map[string][]byte{
		"empty":        nil,
		"garbage":      {0xff},
		"truncated":    enc[:len(enc)-1],
		"trailing":     append(bytes.Clone(enc), 0),
		"index>=count": badIndexEnc,
	} {
		if _, err := UnmarshalShard(data, 1024); ClassOf(err) != ClassMalformed {
			t.Errorf("%s: %v, want malformed", name, err)
		}
	}
	// A payload over the caller's cap is refused before decoding.
	if _, err := UnmarshalShard(enc, 50); ClassOf(err) != ClassMalformed {
		t.Errorf("payload over the cap: %v", err)
	}
	if _, err := UnmarshalShard(make([]byte, 10<<20), 1024); ClassOf(err) != ClassMalformed {
		t.Errorf("oversized input: %v", err)
	}
}

func FuzzUnmarshalShard(f *testing.F) {
	key := testKey(3)
	for _, n := range []int{0, 1, 300} {
		s, err := SignShard(key, testHeader(), bytes.Repeat([]byte{2}, n))
		if err != nil {
			f.Fatal(err)
		}
		enc, err := s.Marshal()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(enc)
	}
	f.Add([]byte{0xa0})
	pub := key.Public().(ed25519.PublicKey)
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := UnmarshalShard(data, 512)
		if err != nil {
			if ClassOf(err) != ClassMalformed {
				t.Fatalf("error %v is not malformed", err)
			}
			return
		}
		if len(s.Payload) > 512 {
			t.Fatalf("payload %d over the cap", len(s.Payload))
		}
		enc, err := s.Marshal()
		if err != nil || !bytes.Equal(enc, data) {
			t.Fatalf("decoded shard does not re-encode to its input: %v", err)
		}
		_ = CheckShardSignature(s, pub)
	})
}
