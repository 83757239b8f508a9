package main

import (
	"crypto/ed25519"
	"encoding/hex"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/node"
	"github.com/lowband/lowband/node/attest"
)

// localNet inits n homes in dir and a sim root key, as scripts/testnet.sh does, and
// returns the homes, their peer IDs and the key file.
func localNet(t *testing.T, n int) (homes, ids []string, key string) {
	t.Helper()
	dir := t.TempDir()
	key = filepath.Join(dir, "sim-root.key")
	if _, stderr, code := runCLI(t, "attest", "sim-keygen", "--out", key); code != 0 {
		t.Fatal(stderr)
	}
	for i := range n {
		h := filepath.Join(dir, "node"+string(rune('1'+i)))
		if _, stderr, code := runCLI(t, "init", "--home", h, "--profile", "local"); code != 0 {
			t.Fatal(stderr)
		}
		homes = append(homes, h)
		ids = append(ids, peerIDOf(t, h))
	}
	return homes, ids, key
}

func TestTestnetSpecValidatesAndInstalls(t *testing.T) {
	homes, ids, key := localNet(t, 2)
	spec := filepath.Join(filepath.Dir(homes[0]), "network.toml")
	if _, stderr, code := runCLI(t, "testnet", "spec", "--base", filepath.Join(homes[0], "network.toml"),
		"--sim-key", key, "--out", spec, ids[0], ids[1]); code != 0 {
		t.Fatal(stderr)
	}
	if _, stderr, code := runCLI(t, append([]string{"testnet", "install", "--spec", spec, "--sim-key", key}, homes...)...); code != 0 {
		t.Fatal(stderr)
	}
	root, err := attest.ReadSimKey(key)
	if err != nil {
		t.Fatal(err)
	}
	var network string
	for _, h := range homes {
		cfg, s, err := configs.Home{Dir: h}.Load()
		if err != nil {
			t.Fatal(err)
		}
		if network != "" && s.NetworkID() != network {
			t.Errorf("%s is on %s, the first home on %s", h, s.NetworkID(), network)
		}
		network = s.NetworkID()
		if len(s.Attest.SimRoots) != 1 || s.Attest.SimRoots[0] != hex.EncodeToString(root.Public().(ed25519.PublicKey)) {
			t.Errorf("sim roots %v: want only the generated root", s.Attest.SimRoots)
		}
		if s.Incentives.Stakes[ids[0]] != 1000 || s.Incentives.Stakes[ids[1]] != 1000 || len(s.Incentives.Stakes) != 2 {
			t.Errorf("stakes %v: want 1000 each for the two peers", s.Incentives.Stakes)
		}
		if g, _ := time.Parse(time.RFC3339, s.Time.GenesisTime); time.Since(g) > time.Minute || s.Training.Task != configs.TaskCharLM {
			t.Errorf("genesis %s, task %s: want now and charlm", s.Time.GenesisTime, s.Training.Task)
		}
		if s.Training.InnerSteps != 10 || s.Round.DeadlineMin != 15 || s.Round.DeadlineMax != 60 {
			t.Errorf("H %d, deadline [%v, %v] s: want 10 and [15, 60]", s.Training.InnerSteps, s.Round.DeadlineMin, s.Round.DeadlineMax)
		}
		if cfg.Attest.SimKeyFile != key {
			t.Errorf("sim_key_file %q, want %q", cfg.Attest.SimKeyFile, key)
		}
		if _, err := node.NewParams(s); err != nil {
			t.Errorf("the network's parameters: %v", err)
		}
	}
}

func TestTestnetInstallWithAnotherSimKeyRefused(t *testing.T) {
	homes, ids, key := localNet(t, 1)
	spec := filepath.Join(filepath.Dir(homes[0]), "network.toml")
	if _, stderr, code := runCLI(t, "testnet", "spec", "--base", filepath.Join(homes[0], "network.toml"),
		"--sim-key", key, "--out", spec, ids[0]); code != 0 {
		t.Fatal(stderr)
	}
	other := filepath.Join(t.TempDir(), "other.key")
	if _, stderr, code := runCLI(t, "attest", "sim-keygen", "--out", other); code != 0 {
		t.Fatal(stderr)
	}
	_, stderr, code := runCLI(t, "testnet", "install", "--spec", spec, "--sim-key", other, homes[0])
	if code != 1 || !strings.Contains(stderr, "does not verify") {
		t.Errorf("install with a key the spec does not trust: exit %d, %q; want a refusal", code, stderr)
	}
}

func TestTestnetSpecStakeBelowMinimumRefused(t *testing.T) {
	homes, ids, key := localNet(t, 1)
	_, stderr, code := runCLI(t, "testnet", "spec", "--base", filepath.Join(homes[0], "network.toml"),
		"--sim-key", key, "--out", filepath.Join(t.TempDir(), "n.toml"), "--stake", "1", ids[0])
	if code != 1 || !strings.Contains(stderr, "below the spec's min_stake") {
		t.Errorf("stake 1: exit %d, %q; want a refusal", code, stderr)
	}
}
