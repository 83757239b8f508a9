package configs

import (
	"errors"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"
)

const canonicalPeer = "12D3KooWGRUVh6zGsDLTPHDA5ib1hLwrkdZLkb7H2zxEk2oHVqbU"

func stakeSpec(id string) string {
	return "version = 1\nname = \"t\"\nrun = \"r\"\n[incentives.stakes]\n\"" + id + "\" = 10\n"
}

// TestGenesisStakeInAnotherPeerIDFormRefused: a stake names its peer in the one canonical
// form (base58, Ed25519 key embedded), so one peer cannot hold two genesis accounts.
func TestGenesisStakeInAnotherPeerIDFormRefused(t *testing.T) {
	id, err := peer.Decode(canonicalPeer)
	if err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string]string{
		"CIDv1 form":           peer.ToCid(id).String(),
		"key not embedded":     "QmYyQSo1c1Ym7orWxLYvCrM2EmxFTANf8wXmmE7DWjhx5N",
		"not a peer ID at all": "alice",
	} {
		_, err := ParseSpec("spec.toml", []byte(stakeSpec(bad)))
		var ke *KeyError
		if !errors.As(err, &ke) || ke.Key != "incentives.stakes."+bad || ke.Line != 5 || ke.File != "spec.toml" {
			t.Errorf("%s (%s): got %v, want an error at spec.toml:5 naming the key", name, bad, err)
		}
	}
	if _, err := ParseSpec("spec.toml", []byte(stakeSpec(canonicalPeer))); err != nil {
		t.Errorf("canonical ID refused: %v", err)
	}
	if s := stakeSpec(peer.ToCid(id).String()); !strings.Contains(s, "bafz") {
		t.Fatalf("test setup: %s is not the CID form", s)
	}
}
