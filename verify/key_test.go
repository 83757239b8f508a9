package verify

import (
	"crypto/ed25519"
	"encoding/hex"
	"testing"
)

func TestStrongKey(t *testing.T) {
	pub, _, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	mustHex := func(s string) []byte {
		b, err := hex.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cases := []struct {
		name string
		key  []byte
		want bool
	}{
		{"generated key", pub, true},
		{"identity (small order)", mustHex("0100000000000000000000000000000000000000000000000000000000000000"), false},
		{"(0,-1): order 2", mustHex("ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f"), false},
		{"y = p+1: non-canonical encoding of the identity", mustHex("eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f"), false},
		{"not on the curve", mustHex("0200000000000000000000000000000000000000000000000000000000000000"), false},
		{"short", pub[:31], false},
	}
	for _, c := range cases {
		if got := strongKey(c.key); got != c.want {
			t.Errorf("%s: strongKey = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestBundleRefusesWeakKey: a bundle attesting a small-order key is malformed, before any
// evidence is looked at, so no shard can ever be checked against such a key.
func TestBundleRefusesWeakKey(t *testing.T) {
	b := &Bundle{
		Version: BundleVersion, Kind: KindSim, Evidence: []byte{1},
		EphemeralKey: append([]byte{1}, make([]byte, 31)...),
		PeerID:       testPeer(t, 1).String(), Network: "net", Run: "run",
	}
	if err := b.check(); ClassOf(err) != ClassMalformed {
		t.Fatalf("weak key: got %v, want class malformed", err)
	}
	pub, _, _ := ed25519.GenerateKey(nil)
	b.EphemeralKey = pub
	if err := b.check(); err != nil {
		t.Fatalf("strong key refused: %v", err)
	}
}
