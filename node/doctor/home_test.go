package doctor

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/lowband/lowband/configs"
)

func TestHomeDir(t *testing.T) {
	h := newHome(t)
	want(t, "initialised home", HomeDir(h), OK, h.Dir, "0700")

	missing := configs.Home{Dir: filepath.Join(t.TempDir(), "nothing")}
	want(t, "missing home", HomeDir(missing), Fail, "does not exist", "lowband init --home "+missing.Dir)

	empty := configs.Home{Dir: t.TempDir()}
	want(t, "home without config", HomeDir(empty), Fail, "no config.toml", "lowband init")

	if err := os.Chmod(h.Dir, 0o777); err != nil {
		t.Fatal(err)
	}
	want(t, "world-writable home", HomeDir(h), Fail, "other users can write", "chmod 700")
}

func TestKey(t *testing.T) {
	h := newHome(t)
	r, id := Key(h)
	want(t, "good key", r, OK, id.String())

	if err := os.Chmod(h.KeyPath(), 0o644); err != nil {
		t.Fatal(err)
	}
	r, _ = Key(h)
	want(t, "key readable by others", r, Fail, "0644", "chmod 600 "+h.KeyPath())

	os.Chmod(h.KeyPath(), 0o600)
	if err := os.WriteFile(h.KeyPath(), []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, _ = Key(h)
	want(t, "garbage key", r, Fail, "not a valid key", "lowband init --force")

	os.Remove(h.KeyPath())
	r, id = Key(h)
	want(t, "missing key", r, Fail, "missing", "backup")
	if id != "" {
		t.Errorf("a missing key gave peer ID %s", id)
	}
}

func TestConfigAndSpec(t *testing.T) {
	h := newHome(t)
	r, c := Config(h)
	want(t, "good config", r, OK, "profile local")
	r, s := Spec(h, c)
	want(t, "good spec", r, OK, "devnet-", "run ")
	if s == nil {
		t.Fatal("no spec from a good file")
	}

	good, _ := os.ReadFile(h.ConfigPath())
	os.WriteFile(h.ConfigPath(), append(good, []byte("\n[p2p]\nconn_low = -1\n")...), 0o644)
	r, c = Config(h)
	want(t, "broken config", r, Fail, "config.toml", "fix the key")
	if c != nil {
		t.Error("a broken config was returned")
	}
	os.WriteFile(h.ConfigPath(), good, 0o644)

	c, _ = loaded(t, h)
	os.WriteFile(h.SpecPath(c), []byte("version = 1\nname = \"Bad Name\"\nrun = \"r\"\n"), 0o644)
	r, s = Spec(h, c)
	want(t, "broken spec", r, Fail, "network.toml:2: name", "spec_file")
	if s != nil {
		t.Error("a broken spec was returned")
	}
}

func TestDisk(t *testing.T) {
	free := func(n uint64, err error) func(string) (uint64, error) {
		return func(string) (uint64, error) { return n, err }
	}
	want(t, "plenty", Disk("/h", free(20<<30, nil)), OK, "20.0 GiB free in /h")
	want(t, "little", Disk("/h", free(500<<20, nil)), Warn, "500.0 MiB", "1 GiB")
	want(t, "almost none", Disk("/h", free(10<<20, nil)), Fail, "10.0 MiB", "free some space")
	want(t, "statfs fails", Disk("/h", free(0, errors.New("no such file"))), Fail, "no such file")
	want(t, "unsupported", Disk("/h", free(0, errUnsupported)), Skip, "not checked")
	if n, err := FreeBytes(t.TempDir()); err != nil && !errors.Is(err, errUnsupported) || err == nil && n == 0 {
		t.Errorf("FreeBytes of a temp dir: %d, %v", n, err)
	}
}

func TestClock(t *testing.T) {
	synced := func(s bool, err error) func() (bool, error) { return func() (bool, error) { return s, err } }
	want(t, "synchronised", Clock(synced(true, nil)), OK, "synchronised")
	want(t, "drifting", Clock(synced(false, nil)), Warn, "not synchronised", "chrony")
	want(t, "cannot ask", Clock(synced(false, errors.New("EPERM"))), Warn, "EPERM", "timedatectl")
	want(t, "unsupported", Clock(synced(false, errUnsupported)), Skip, "not checked")
}
