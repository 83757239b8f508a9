package configs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestProfilesValidate(t *testing.T) {
	for _, p := range Profiles {
		c, err := Default(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Validate(); err != nil {
			t.Errorf("profile %s: %v", p, err)
		}
	}
	if _, err := Default("nope"); err == nil {
		t.Error("unknown profile accepted")
	}
}

func TestConfigRoundTrip(t *testing.T) {
	dir := t.TempDir()
	c, _ := Default(ProfileBootstrap)
	c.P2P.Bootstrap = []string{"/ip4/127.0.0.1/tcp/4001/p2p/12D3KooWGRUVh6zGsDLTPHDA5ib1hLwrkdZLkb7H2zxEk2oHVqbU"}
	p := filepath.Join(dir, "config.toml")
	if err := WriteConfig(p, c); err != nil {
		t.Fatal(err)
	}
	got, err := LoadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	if got.Role != RoleBootstrap || got.P2P.ConnHigh != c.P2P.ConnHigh || len(got.P2P.Bootstrap) != 1 {
		t.Errorf("round trip lost fields: %+v", got)
	}
}

// TestConfigErrorsNameKeyAndLine covers malformed files: each error must name the file,
// the key and the line, so a user can find the mistake.
func TestConfigErrorsNameKeyAndLine(t *testing.T) {
	cases := []struct {
		name, body string
		key        string
		line       int
	}{
		{"syntax", "profile = \"local\"\n[p2p]\nlisten = [\"/ip4/127.0.0.1/tcp/0\"\n", "", 4},
		{"wrong type", "profile = \"local\"\n\n[p2p]\nconn_low = \"many\"\n", "p2p.conn_low", 4},
		{"unknown key", "profile = \"local\"\n[p2p]\nlisten_addr = []\n", "p2p.listen_addr", 3},
		{"bad bootstrap multiaddr", "profile = \"local\"\n[p2p]\n\nbootstrap = [\"not-a-multiaddr\"]\n", "p2p.bootstrap[0]", 4},
		{"bootstrap without peer id", "profile = \"local\"\n[p2p]\nbootstrap = [\"/ip4/1.2.3.4/tcp/1\"]\n", "p2p.bootstrap[0]", 3},
		{"bad log format", "profile = \"local\"\n[log]\nformat = \"xml\"\n", "log.format", 3},
		{"bad api listen", "[api]\nlisten = \"nohostport\"\n", "api.listen", 2},
		{"unknown profile", "profile = \"cloud\"\n", "profile", 1},
		{"negative memory limit", "profile = \"local\"\nmemory_limit_mib = -1\n", "memory_limit_mib", 2},
		{"forward hold too long", "profile = \"local\"\n[p2p]\nforward_hold_ms = 10001\n", "p2p.forward_hold_ms", 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, t.TempDir(), "config.toml", tc.body)
			_, err := LoadConfig(p)
			var ke *KeyError
			if !errors.As(err, &ke) {
				t.Fatalf("want *KeyError, got %T %v", err, err)
			}
			if ke.Line != tc.line || (tc.key != "" && ke.Key != tc.key) {
				t.Errorf("got key %q line %d, want key %q line %d (%v)", ke.Key, ke.Line, tc.key, tc.line, err)
			}
			if !strings.Contains(err.Error(), p) {
				t.Errorf("error does not name the file: %v", err)
			}
		})
	}
}

func TestSpecErrorsAndHash(t *testing.T) {
	base := "version = 1\nname = \"testnet\"\nrun = \"r1\"\n"
	s, err := ParseSpec("spec", []byte(base))
	if err != nil {
		t.Fatal(err)
	}
	// Layout and the bootstrap list do not change the network's identity; the run does.
	s2, err := ParseSpec("spec", []byte("# a comment\nrun = \"r1\"\nname = \"testnet\"\nversion = 1\nbootstrap = [\"/ip4/1.2.3.4/tcp/1/p2p/12D3KooWGRUVh6zGsDLTPHDA5ib1hLwrkdZLkb7H2zxEk2oHVqbU\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.NetworkID() != s2.NetworkID() {
		t.Errorf("same spec, different IDs: %s %s", s.NetworkID(), s2.NetworkID())
	}
	s3, _ := ParseSpec("spec", []byte("version = 1\nname = \"testnet\"\nrun = \"r2\"\n"))
	if s3 == nil || s3.NetworkID() == s.NetworkID() {
		t.Errorf("different runs share a network ID")
	}
	if !strings.HasPrefix(s.NetworkID(), "testnet-") || len(s.NetworkID()) != len("testnet-")+8 {
		t.Errorf("network ID %q", s.NetworkID())
	}

	bad := []struct{ body, key string }{
		{"version = 2\nname = \"x\"\nrun = \"r\"\n", "version"},
		{"version = 1\nname = \"Bad Name\"\nrun = \"r\"\n", "name"},
		{"version = 1\nname = \"x\"\nrun = \"r\"\nbootstrap = [\"/ip4/1.2.3.4\"]\n", "bootstrap[0]"},
		{"version = 1\nname = \"x\"\nrun = \"r\"\ncolour = \"blue\"\n", "colour"},
	}
	for _, b := range bad {
		_, err := ParseSpec("spec", []byte(b.body))
		var ke *KeyError
		if !errors.As(err, &ke) || ke.Key != b.key || ke.Line == 0 {
			t.Errorf("%q: got %v, want key %s with a line", b.body, err, b.key)
		}
	}
}

func TestDevnetSpecParses(t *testing.T) {
	s, err := ParseSpec("devnet", DevnetSpec)
	if err != nil {
		t.Fatal(err)
	}
	// Written out and read back, the spec keeps its identity (empty and missing lists agree).
	p := filepath.Join(t.TempDir(), "network.toml")
	if err := WriteSpec(p, s); err != nil {
		t.Fatal(err)
	}
	back, err := LoadSpec(p)
	if err != nil {
		t.Fatal(err)
	}
	if back.NetworkID() != s.NetworkID() {
		t.Errorf("network ID changed on a write and read: %s -> %s", s.NetworkID(), back.NetworkID())
	}
}

func TestHomeInit(t *testing.T) {
	h := Home{Dir: filepath.Join(t.TempDir(), "home")}
	if _, _, err := h.Load(); !errors.Is(err, ErrNoHome) {
		t.Fatalf("load of a missing home: %v", err)
	}
	if err := h.Init(InitOptions{Profile: ProfileLocal}); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(h.KeyPath())
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key mode: %v %v", st.Mode(), err)
	}
	k1, err := h.LoadIdentity()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Init(InitOptions{Profile: ProfileLocal}); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("second init without --force: %v", err)
	}
	if k2, _ := h.LoadIdentity(); !k1.Equals(k2) {
		t.Fatal("refused init still changed the key")
	}
	if err := h.Init(InitOptions{Profile: ProfilePublic, Force: true}); err != nil {
		t.Fatal(err)
	}
	if k3, _ := h.LoadIdentity(); k1.Equals(k3) {
		t.Fatal("forced init kept the old key")
	}
	if _, _, err := h.Load(); err != nil {
		t.Fatal(err)
	}
}

func TestIdentityRefusals(t *testing.T) {
	h := Home{Dir: t.TempDir()}
	if err := h.Init(InitOptions{Profile: ProfileLocal, Force: true}); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(h.KeyPath(), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := h.LoadIdentity(); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("world-readable key accepted: %v", err)
	}
	os.Chmod(h.KeyPath(), 0o600)
	os.WriteFile(h.KeyPath(), []byte("garbage"), 0o600)
	if _, err := h.LoadIdentity(); err == nil || !strings.Contains(err.Error(), "not a valid key") {
		t.Errorf("garbage key accepted: %v", err)
	}
	os.Remove(h.KeyPath())
	if _, err := h.LoadIdentity(); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing key: %v", err)
	}
}

func TestInitRejectsBadSpec(t *testing.T) {
	h := Home{Dir: filepath.Join(t.TempDir(), "h")}
	err := h.Init(InitOptions{Profile: ProfileLocal, Spec: []byte("version = 1\nname = \"x\"\n")})
	if err == nil {
		t.Fatal("spec without run accepted")
	}
	if _, statErr := os.Stat(h.Dir); !os.IsNotExist(statErr) {
		t.Error("failed init left a home directory behind")
	}
}

// TestInternetProfilesAnnounceOnlyPublicAddrs: the profiles meant for the internet
// (public, bootstrap) announce only public addresses; the local one, on 127.0.0.1,
// keeps its loopback addresses or its swarm could not find itself.
func TestInternetProfilesAnnounceOnlyPublicAddrs(t *testing.T) {
	for p, want := range map[string]bool{ProfilePublic: true, ProfileBootstrap: true, ProfileLocal: false} {
		c, err := Default(p)
		if err != nil {
			t.Fatal(err)
		}
		if c.P2P.PublicOnly != want {
			t.Errorf("profile %s: p2p.public_only = %v, want %v", p, c.P2P.PublicOnly, want)
		}
	}
}

// TestMemoryLimitDefaultAndSet: every profile has the default memory limit, a config file
// sets another (0: none), and a negative one is refused with its key.
func TestMemoryLimitDefaultAndSet(t *testing.T) {
	for _, p := range Profiles {
		c, err := Default(p)
		if err != nil || c.MemoryLimitMiB != DefaultMemoryLimitMiB {
			t.Fatalf("%s: memory limit %v, want %d (%v)", p, c, DefaultMemoryLimitMiB, err)
		}
	}
	for body, want := range map[string]int{"memory_limit_mib = 300\n": 300, "memory_limit_mib = 0\n": 0} {
		c, err := LoadConfig(writeFile(t, t.TempDir(), "config.toml", "profile = \"local\"\n"+body))
		if err != nil || c.MemoryLimitMiB != want {
			t.Errorf("%q: %v (%v), want %d", body, c, err, want)
		}
	}
	var ke *KeyError
	_, err := LoadConfig(writeFile(t, t.TempDir(), "config.toml", "profile = \"local\"\nmemory_limit_mib = -1\n"))
	if !errors.As(err, &ke) || ke.Key != "memory_limit_mib" || !strings.Contains(err.Error(), "at least 0") {
		t.Errorf("a negative limit: %v", err)
	}
}
