package verify

import (
	"crypto/ed25519"
	"crypto/sha256"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
)

func testPeer(t *testing.T, seed byte) peer.ID {
	t.Helper()
	id, err := peer.IDFromPrivateKey(testIdentity(seed))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// testIdentity returns a deterministic libp2p identity key from a seed byte.
func testIdentity(seed byte) crypto.PrivKey {
	s := make([]byte, 32)
	s[0] = seed
	priv, err := crypto.UnmarshalEd25519PrivateKey(ed25519.NewKeyFromSeed(s))
	if err != nil {
		panic(err) // a 64-byte Ed25519 key always unmarshals
	}
	return priv
}

// TestParsePeerIDRefusesOtherForms: the CIDv1 form of a valid ID names the same peer but
// is refused, so a peer has exactly one name on the wire and in the ledger.
func TestParsePeerIDRefusesOtherForms(t *testing.T) {
	id := testPeer(t, 1)
	if _, pub, err := ParsePeerID(id.String()); err != nil || pub == nil {
		t.Fatalf("canonical form refused: %v", err)
	}
	cidForm := peer.ToCid(id).String()
	if cidForm == id.String() {
		t.Fatal("test setup: CID form equals base58 form")
	}
	if decoded, err := peer.Decode(cidForm); err != nil || decoded != id {
		t.Fatalf("test setup: CID form does not decode to the same ID: %v", err)
	}
	if _, _, err := ParsePeerID(cidForm); ClassOf(err) != ClassMalformed || !strings.Contains(err.Error(), "canonical") {
		t.Fatalf("CID form: got %v, want a malformed non-canonical error", err)
	}
	for _, bad := range []string{"", "not-a-peer", strings.Repeat("1", MaxIDLen+1), "Qm" + id.String()[2:]} {
		if _, _, err := ParsePeerID(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestParsePeerIDRefusesHashedKeys: an ID that is a SHA-256 of its key (RSA-style "Qm...")
// does not carry the key, so an identity signature could not be checked against it.
func TestParsePeerIDRefusesHashedKeys(t *testing.T) {
	pub := testPeer(t, 2)
	k, err := pub.ExtractPublicKey()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := crypto.MarshalPublicKey(k)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(raw)
	// A sha2-256 multihash of a key: the form go-libp2p uses for keys over 42 bytes.
	hashed, err := peer.IDFromBytes(append([]byte{0x12, 0x20}, sum[:]...))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ParsePeerID(hashed.String()); err == nil {
		t.Fatal("a peer ID without an embedded key was accepted")
	}
}

// TestParsePeerIDRefusesWeakKeys: a peer ID whose Ed25519 key is of small order is refused.
// Under such a key anyone can make identity signatures, so anyone could make bundles in
// that peer's name and have it slashed, or act as it in the ledger.
func TestParsePeerIDRefusesWeakKeys(t *testing.T) {
	identity := append([]byte{1}, make([]byte, 31)...) // the neutral element
	pub, err := crypto.UnmarshalEd25519PublicKey(identity)
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ParsePeerID(id.String()); ClassOf(err) != ClassMalformed {
		t.Fatalf("peer ID with a small-order key: %v, want malformed", err)
	}
}

// TestParsePeerIDRemembersOnlyWhatItAccepts: an accepted ID parses again to the same ID
// and key, from parsedIDs; a refused one (a small-order key, another form of a valid ID)
// is refused every time and never remembered, so that it cannot stand for a verdict.
func TestParsePeerIDRemembersOnlyWhatItAccepts(t *testing.T) {
	id := testPeer(t, 3)
	for i := range 2 {
		got, pub, err := ParsePeerID(id.String())
		if err != nil || got != id {
			t.Fatalf("parse %d: %v, %v", i, got, err)
		}
		want, err := id.ExtractPublicKey()
		if err != nil || !pub.Equals(want) {
			t.Fatalf("parse %d: key %v, want the one the ID embeds (%v)", i, pub, err)
		}
		if _, ok := parsedIDs.Peek(id.String()); !ok {
			t.Fatalf("parse %d: the accepted ID is not remembered", i)
		}
	}
	weak, err := crypto.UnmarshalEd25519PublicKey(append([]byte{1}, make([]byte, 31)...))
	if err != nil {
		t.Fatal(err)
	}
	weakID, err := peer.IDFromPublicKey(weak)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{weakID.String(), peer.ToCid(id).String()} {
		for i := range 2 {
			if _, _, err := ParsePeerID(bad); ClassOf(err) != ClassMalformed {
				t.Fatalf("%s, parse %d: %v, want malformed", bad, i, err)
			}
		}
		if _, ok := parsedIDs.Peek(bad); ok {
			t.Fatalf("the refused %s is remembered", bad)
		}
	}
}
