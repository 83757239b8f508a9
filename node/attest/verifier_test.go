package attest

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"log/slog"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/verify"
)

func TestVerifierLogsSimAsInsecure(t *testing.T) {
	spec, err := configs.ParseSpec("devnet", configs.DevnetSpec)
	if err != nil {
		t.Fatal(err)
	}
	p, err := PolicyFromSpec(spec.Attest, spec.NetworkID(), spec.Run)
	if err != nil {
		t.Fatal(err)
	}
	var logBuf bytes.Buffer
	v := NewVerifier(p, 16, slog.New(slog.NewTextHandler(&logBuf, nil)))
	eph := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{8}, 32)).Public().(ed25519.PublicKey)
	b, err := Attest(context.Background(), NewSimProducer(DevnetSimRoot(), make([]byte, 48)), spec.NetworkID(), spec.Run, testIdentity(t), 2, eph)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		verdict, err := v.Verify(b, 2)
		if err != nil || !verdict.Insecure {
			t.Fatalf("%v %+v", err, verdict)
		}
	}
	if n := strings.Count(logBuf.String(), "INSECURE"); n != 1 {
		t.Fatalf("logged %d insecure acceptances for one bundle verified once and cached:\n%s", n, logBuf.String())
	}
	if _, ok := v.Lookup(b.Hash(), 2); !ok {
		t.Fatal("verdict not cached")
	}
	b.Epoch = 9 // no longer bound, and not in the cache under this hash
	if _, err := v.Verify(b, 9); verify.ClassOf(err) != verify.ClassIdentityMismatch {
		t.Fatalf("changed epoch: %v", err)
	}
}

func TestCheckStart(t *testing.T) {
	devnet, err := configs.ParseSpec("devnet", configs.DevnetSpec)
	if err != nil {
		t.Fatal(err)
	}
	hw, err := configs.ParseSpec("hw", []byte("version = 1\nname = \"prod\"\nrun = \"r\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	local, _ := configs.Default(configs.ProfileLocal)
	public, _ := configs.Default(configs.ProfilePublic)
	if err := CheckStart(local, devnet); err != nil {
		t.Fatalf("local on devnet: %v", err)
	}
	if err := CheckStart(public, devnet); err == nil {
		t.Fatal("public profile ran on a sim network")
	}
	if err := CheckStart(local, hw); err == nil {
		t.Fatal("sim producer on a hardware-only network")
	}
	public.Attest.Producer = configs.KindSEVSNP
	if err := CheckStart(public, hw); err != nil {
		t.Fatalf("sev-snp producer on a hardware network: %v", err)
	}
}

// testIdentity is a fixed libp2p identity key.
func testIdentity(t *testing.T) crypto.PrivKey {
	t.Helper()
	k, err := crypto.UnmarshalEd25519PrivateKey(ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32)))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestLookupStaleVerdictRefused: a cached verdict is returned only while its epoch is
// within the policy's window of the epoch asked about.
func TestLookupStaleVerdictRefused(t *testing.T) {
	spec, err := configs.ParseSpec("devnet", configs.DevnetSpec)
	if err != nil {
		t.Fatal(err)
	}
	p, err := PolicyFromSpec(spec.Attest, spec.NetworkID(), spec.Run)
	if err != nil {
		t.Fatal(err)
	}
	v := NewVerifier(p, 16, nil)
	eph := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{8}, 32)).Public().(ed25519.PublicKey)
	b, err := Attest(context.Background(), NewSimProducer(DevnetSimRoot(), make([]byte, 48)), spec.NetworkID(), spec.Run, testIdentity(t), 2, eph)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(b, 2); err != nil {
		t.Fatal(err)
	}
	if _, ok := v.Lookup(b.Hash(), 2+p.MaxAgeEpochs+1); ok {
		t.Fatalf("verdict of epoch 2 returned at epoch %d (max age %d)", 2+p.MaxAgeEpochs+1, p.MaxAgeEpochs)
	}
}
