package verify

import (
	"bytes"
	"crypto/ed25519"
	"testing"

	"github.com/fxamacker/cbor/v2"
	sevdata "github.com/google/go-sev-guest/verify/testdata"
	"github.com/libp2p/go-libp2p/core/peer"
)

func TestBundleRoundTrip(t *testing.T) {
	b := simBundle(t, testKey(1), 3)
	b.Endorsements = [][]byte{{1, 2, 3}}
	enc, err := b.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	got, err := UnmarshalBundle(enc)
	if err != nil {
		t.Fatal(err)
	}
	again, err := got.Marshal()
	if err != nil || !bytes.Equal(enc, again) {
		t.Fatalf("re-encoding differs: %v", err)
	}
	if got.Hash() != b.Hash() {
		t.Fatal("hash changed across a round trip")
	}
	b.Epoch++
	if got.Hash() == b.Hash() {
		t.Fatal("hash does not cover the epoch")
	}
}

func TestUnmarshalBundleRefuses(t *testing.T) {
	b := simBundle(t, testKey(1), 3)
	good, err := b.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	// The same map with its keys in another order: valid CBOR, not canonical.
	var m map[int]any
	if err := cbor.Unmarshal(good, &m); err != nil {
		t.Fatal(err)
	}
	noncanon := reorderedMap(t, m)

	short := *b
	short.EphemeralKey = short.EphemeralKey[:31]
	shortEnc, _ := encMode.Marshal(&short)
	badKind := *b
	badKind.Kind = "sgx"
	badKindEnc, _ := encMode.Marshal(&badKind)
	unknownField, _ := encMode.Marshal(map[int]any{1: 1, 2: "sim", 3: []byte{1}, 5: make([]byte, 32), 6: "p", 7: "n", 8: "r", 99: 1})

	for name, tc := range map[string]struct {
		data []byte
		want Class
	}{
		"empty":         {nil, ClassMalformed},
		"garbage":       {[]byte{0xff, 0x00}, ClassMalformed},
		"truncated":     {good[:len(good)-3], ClassMalformed},
		"trailing":      {append(bytes.Clone(good), 0), ClassMalformed},
		"too big":       {make([]byte, MaxBundleSize+1), ClassMalformed},
		"non-canonical": {noncanon, ClassMalformed},
		"short key":     {shortEnc, ClassMalformed},
		"unknown kind":  {badKindEnc, ClassUnsupportedKind},
		"unknown field": {unknownField, ClassMalformed},
	} {
		if _, err := UnmarshalBundle(tc.data); ClassOf(err) != tc.want {
			t.Errorf("%s: %v, want %s", name, err, tc.want)
		}
	}
}

// reorderedMap encodes m with its keys in descending order (not the canonical order).
func reorderedMap(t *testing.T, m map[int]any) []byte {
	t.Helper()
	keys := []int{9, 8, 7, 6, 5, 3, 2, 1}
	out := []byte{0xa0 | byte(len(keys))}
	for _, k := range keys {
		kb, err := encMode.Marshal(k)
		if err != nil {
			t.Fatal(err)
		}
		vb, err := encMode.Marshal(m[k])
		if err != nil {
			t.Fatal(err)
		}
		out = append(append(out, kb...), vb...)
	}
	return out
}

func FuzzUnmarshalBundle(f *testing.F) {
	root := testKey(1)
	id, _ := peer.IDFromPrivateKey(testIdentity(3))
	p := id.String()
	eph := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)).Public().(ed25519.PublicKey)
	for _, b := range []*Bundle{
		mustSimBundle(f, root, 1),
		{Version: BundleVersion, Kind: KindSEVSNP, Evidence: sevdata.AttestationBytes, Endorsements: [][]byte{sevdata.VcekBytes},
			EphemeralKey: eph, PeerID: p, Network: "n", Run: "r", IdentitySig: make([]byte, IdentitySigSize)},
		{Version: BundleVersion, Kind: KindTDX, Evidence: tdxQuote, EphemeralKey: eph, PeerID: p, Network: "n", Run: "r"},
	} {
		enc, err := b.Marshal()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(enc)
	}
	f.Add([]byte{})
	f.Add([]byte{0xa1, 0x01, 0x01})
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := UnmarshalBundle(data)
		if err != nil {
			if ClassOf(err) == "" {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		// Whatever decodes is canonical: it re-encodes to the same bytes.
		enc, err := b.Marshal()
		if err != nil || !bytes.Equal(enc, data) {
			t.Fatalf("decoded bundle does not re-encode to its input: %v", err)
		}
		// Verification never panics on it, whatever the policy.
		p := simPolicy(root)
		p.Kinds = Kinds
		_, _ = Verify(b, p, nil, b.Epoch, testNow)
	})
}

func mustSimBundle(f *testing.F, root []byte, epoch uint64) *Bundle {
	b, err := NewSimBundle(root, simMeasurement(), "n", "r", testIdentity(3), epoch, ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)).Public().(ed25519.PublicKey))
	if err != nil {
		f.Fatal(err)
	}
	return b
}
