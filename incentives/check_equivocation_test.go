package incentives_test

import (
	"crypto/ed25519"
	"testing"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
	"github.com/lowband/lowband/verify"
)

// signWithNonce is incentivestest.SignWithNonce, failing t on error.
func signWithNonce(t *testing.T, key ed25519.PrivateKey, msg []byte, nonce byte) []byte {
	t.Helper()
	sig, err := incentivestest.SignWithNonce(key, msg, nonce)
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

// TestOneHeaderSignedTwiceIsNotEquivocation: two valid signatures over one header are one
// statement, not two conflicting ones.
func TestOneHeaderSignedTwiceIsNotEquivocation(t *testing.T) {
	fx := incentivestest.New("testnet", "run-1")
	b := fx.Bundle("B", "")
	s := fx.Shard("B", b, 3, 0, []byte("payload"))
	msg, err := s.Header.SigningBytes()
	if err != nil {
		t.Fatal(err)
	}
	again := incentives.SignedHeader{Header: s.Header, Sig: signWithNonce(t, fx.Key("B"), msg, 1)}
	if err := verify.CheckHeaderSignature(&again.Header, again.Sig, fx.Key("B").Public().(ed25519.PublicKey)); err != nil {
		t.Fatalf("test setup: the second signature does not verify: %v", err)
	}
	e := incentives.NewEquivocation(b, incentivestest.Signed(s), again)
	off, err := fx.Checker().Check(e)
	if err == nil {
		t.Fatalf("one header signed twice accepted as %v", off)
	}
	if _, err := incentives.DecodeEvidence(e.Marshal()); err == nil {
		t.Fatal("one header signed twice decodes as equivocation evidence")
	}
}

// variant re-signs bundle's binding with its peer's identity under another nonce: a bundle
// that is byte-different (another hash) but binds the same peer, key and epoch.
func variant(t *testing.T, bundle []byte, name string) []byte {
	t.Helper()
	b, err := verify.UnmarshalBundle(bundle)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := incentivestest.Identity(name).Raw()
	if err != nil {
		t.Fatal(err)
	}
	b.IdentitySig = signWithNonce(t, ed25519.PrivateKey(raw), b.IdentityMessage(), 2)
	out, err := b.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestEquivocationAcrossBundleVariantsProvable: a signer cannot dodge equivocation by naming
// two byte-different bundles of one attestation in its two headers: the evidence carries
// one of them, and the other header's bundle hash does not matter.
func TestEquivocationAcrossBundleVariantsProvable(t *testing.T) {
	fx := incentivestest.New("testnet", "run-1")
	b1 := fx.Bundle("B", "")
	b2 := variant(t, b1, "B")
	if string(b1) == string(b2) {
		t.Fatal("test setup: the variant is the same bundle")
	}
	x := fx.Shard("B", b1, 3, 0, []byte("one"))
	y := fx.Shard("B", b2, 3, 0, []byte("two"))
	for _, b := range [][]byte{b1, b2} {
		off, err := fx.Checker().Check(incentives.NewEquivocation(b, incentivestest.Signed(x), incentivestest.Signed(y)))
		if err != nil || off.Peer != incentivestest.PeerID("B") {
			t.Fatalf("equivocation across bundle variants: %v %v", off, err)
		}
	}
}

// TestEquivocationAcrossEphemeralKeysProvable: a peer that attested two ephemeral keys in
// one epoch and signs conflicting headers with one each is caught: the evidence carries both
// bundles, each signed by the peer's identity.
func TestEquivocationAcrossEphemeralKeysProvable(t *testing.T) {
	fx := incentivestest.New("testnet", "run-1")
	b1, b2 := fx.Bundle("B", ""), fx.SecondBundle("B")
	x := fx.Shard("B", b1, 3, 0, []byte("one"))
	bh, err := verify.UnmarshalBundle(b2)
	if err != nil {
		t.Fatal(err)
	}
	h := x.Header
	hash := bh.Hash()
	h.BundleHash = hash[:]
	y, err := verify.SignShard(fx.SecondKey("B"), h, []byte("two"))
	if err != nil {
		t.Fatal(err)
	}
	e := incentives.NewEquivocationOf(b1, incentivestest.Signed(x), b2, incentivestest.Signed(y))
	dec, err := incentives.DecodeEvidence(e.Marshal())
	if err != nil {
		t.Fatalf("decoding: %v", err)
	}
	if off, err := fx.Checker().Check(dec); err != nil || off.Peer != incentivestest.PeerID("B") {
		t.Fatalf("equivocation across two attested keys: %v %v", off, err)
	}
	// The same with the pairs given the other way round is the same evidence.
	if f := incentives.NewEquivocationOf(b2, incentivestest.Signed(y), b1, incentivestest.Signed(x)); f.ID() != e.ID() {
		t.Fatal("two encodings of one equivocation")
	}
	// A second bundle of another peer proves nothing about B.
	c := fx.SecondBundle("C")
	z, err := verify.SignShard(fx.SecondKey("C"), h, []byte("two"))
	if err != nil {
		t.Fatal(err)
	}
	wantRefused(t, fx.Checker(), incentives.NewEquivocationOf(b1, incentivestest.Signed(x), c, incentivestest.Signed(z)))
}

// TestLeakedKeyCannotSpeakOutsideItsEpoch: with the network's epoch length set, a header
// counts only in the rounds where its bundle is accepted, so a leaked ephemeral key of
// epoch 0 cannot make the peer equivocate in a round of epoch 50.
func TestLeakedKeyCannotSpeakOutsideItsEpoch(t *testing.T) {
	fx := incentivestest.New("testnet", "run-1")
	c := fx.Checker()
	c.EpochRounds = 10
	if _, err := c.Check(fx.Equivocation("B", 15, 0, "x")); err != nil {
		t.Fatalf("round 15 under an epoch-0 bundle (max age 1): %v", err)
	}
	wantRefused(t, c, fx.Equivocation("B", 500, 0, "x"))
	wantRefused(t, c, fx.InvalidContent("B", 500, 0))
}
