package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lowband/lowband/configs"
)

// lowbandBin is the binary built once by TestMain for the end-to-end tests.
var lowbandBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "lowband-e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	lowbandBin = filepath.Join(dir, "lowband")
	// Built without -race: these tests drive processes and spawn the CLI often; the race
	// detector covers the same code in the in-process tests.
	out, err := exec.Command("go", "build", "-o", lowbandBin, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building lowband: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// lb runs the binary and returns stdout, stderr and the exit code.
func lb(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, lowbandBin, args...)
	cmd.Env = append(os.Environ(), "LOWBAND_HOME=") // never touch the user's home
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running lowband %v: %v", args, err)
	}
	return stdout.String(), stderr.String(), code
}

// wantError asserts a clean failure: exit 1, one "lowband: " line naming want, no stack trace.
func wantError(t *testing.T, want string, args ...string) {
	t.Helper()
	_, stderr, code := lb(t, args...)
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	last := lines[len(lines)-1]
	if code != 1 || !strings.HasPrefix(last, "lowband: ") || !strings.Contains(last, want) {
		t.Errorf("lowband %v: exit %d, stderr %q; want exit 1 and %q", args, code, stderr, want)
	}
	if strings.Contains(stderr, "goroutine ") || strings.Contains(stderr, "panic") {
		t.Errorf("lowband %v printed a stack trace:\n%s", args, stderr)
	}
}

func initHome(t *testing.T, profile string) string {
	t.Helper()
	home := filepath.Join(t.TempDir(), "home")
	if _, stderr, code := lb(t, "init", "--home", home, "--profile", profile); code != 0 {
		t.Fatalf("init: %s", stderr)
	}
	return home
}

func TestCLIBadInput(t *testing.T) {
	home := initHome(t, "local")
	missing := filepath.Join(t.TempDir(), "nothing-here")

	wantError(t, "unknown command", "frobnicate")
	wantError(t, "flag provided but not defined", "run", "--bogus")
	wantError(t, "refusing to overwrite", "init", "--home", home)
	wantError(t, "unknown profile", "init", "--home", missing, "--profile", "cloud")
	wantError(t, "lowband init --home", "run", "--home", missing)
	wantError(t, "no node is running", "status", "--home", home)
	wantError(t, "no node is running", "peers", "--home", home, "--json")
	wantError(t, "not a multiaddr", "bootstrap", "add", "--home", home, "not-an-address")
	wantError(t, "/p2p/", "bootstrap", "add", "--home", home, "/ip4/127.0.0.1/tcp/4001")
	wantError(t, "is not in", "bootstrap", "rm", "--home", home, "/ip4/127.0.0.1/tcp/1/p2p/12D3KooWGRUVh6zGsDLTPHDA5ib1hLwrkdZLkb7H2zxEk2oHVqbU")

	// A malformed config names the file, the line and the key.
	cfgPath := filepath.Join(home, "config.toml")
	good, _ := os.ReadFile(cfgPath)
	os.WriteFile(cfgPath, append(append([]byte{}, good...), []byte("\n[extra]\nkey = 1\n")...), 0o644)
	wantError(t, "config.toml:", "run", "--home", home)
	os.WriteFile(cfgPath, bytes.Replace(good, []byte(`format = 'text'`), []byte(`format = 'xml'`), 1), 0o644)
	wantError(t, "log.format", "run", "--home", home)
	os.WriteFile(cfgPath, good, 0o644)

	// A malformed network spec, too.
	specPath := filepath.Join(home, "network.toml")
	spec, _ := os.ReadFile(specPath)
	os.WriteFile(specPath, []byte("version = 1\nname = \"Bad Name\"\nrun = \"r\"\n"), 0o644)
	wantError(t, "network.toml:2: name", "run", "--home", home)
	os.WriteFile(specPath, spec, 0o644)

	// The identity key: readable by others, or missing, refuses to start.
	keyPath := filepath.Join(home, "identity.key")
	os.Chmod(keyPath, 0o644)
	wantError(t, "chmod 600", "run", "--home", home)
	os.Chmod(keyPath, 0o600)
	key, _ := os.ReadFile(keyPath)
	os.Remove(keyPath)
	wantError(t, "identity key", "run", "--home", home)
	os.WriteFile(keyPath, key, 0o600)

	// The key is never printed.
	out, _, _ := lb(t, "id", "--home", home, "--json")
	if strings.Contains(out, string(key)) || !strings.Contains(out, "12D3Koo") {
		t.Errorf("id output: %s", out)
	}
}

func TestBootstrapEdit(t *testing.T) {
	home := initHome(t, "local")
	addr := "/ip4/127.0.0.1/tcp/4001/p2p/12D3KooWGRUVh6zGsDLTPHDA5ib1hLwrkdZLkb7H2zxEk2oHVqbU"
	if _, stderr, code := lb(t, "bootstrap", "add", "--home", home, addr); code != 0 {
		t.Fatal(stderr)
	}
	wantError(t, "already", "bootstrap", "add", "--home", home, addr)
	out, _, _ := lb(t, "bootstrap", "list", "--home", home)
	if !strings.Contains(out, addr) {
		t.Errorf("list after add: %q", out)
	}
	if _, stderr, code := lb(t, "bootstrap", "rm", "--home", home, addr); code != 0 {
		t.Fatal(stderr)
	}
	out, _, _ = lb(t, "bootstrap", "list", "--home", home, "--json")
	var lists map[string][]string
	if err := json.Unmarshal([]byte(out), &lists); err != nil || len(lists["config"]) != 0 {
		t.Errorf("list after rm: %q %v", out, err)
	}
}

// startNode runs `lowband run` and waits until its API answers.
func startNode(t *testing.T, home string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(lowbandBin, append([]string{"run", "--home", home}, args...)...)
	logf, err := os.Create(filepath.Join(home, "node.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		logf.Close()
		keepLogs(t, home)
	})
	waitFor(t, 30*time.Second, "node API", func() bool {
		var st struct{}
		return apiGet(context.Background(), configs.Home{Dir: home}, "/status", &st) == nil
	})
	return cmd
}

// keepLogs copies a failed test's node logs (node.log and the logs of earlier runs of the
// node) into the directory LOWBAND_TEST_KEEP names, when it is set, since the homes are
// temporary directories the test removes.
func keepLogs(t *testing.T, home string) {
	dir := os.Getenv("LOWBAND_TEST_KEEP")
	if dir == "" || !t.Failed() {
		return
	}
	logs, _ := filepath.Glob(filepath.Join(home, "node.log*"))
	for _, l := range logs {
		data, err := os.ReadFile(l)
		if err != nil {
			continue
		}
		name := strings.ReplaceAll(t.Name(), "/", "_") + "-" + filepath.Base(home) + "-" + filepath.Base(l)
		if err := os.MkdirAll(dir, 0o755); err == nil {
			os.WriteFile(filepath.Join(dir, name), data, 0o644)
		}
	}
}

func waitFor(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// stopNode sends SIGTERM and asserts a clean exit 0.
func stopNode(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("node exited with %v after SIGTERM", err)
		}
	case <-time.After(20 * time.Second):
		t.Errorf("node did not stop within 20s of SIGTERM")
	}
}

func TestRunStatusAndCleanShutdown(t *testing.T) {
	home := initHome(t, "local")
	cmd := startNode(t, home, "--log-format", "json")
	out, stderr, code := lb(t, "status", "--home", home, "--json")
	if code != 0 {
		t.Fatal(stderr)
	}
	var st struct {
		PeerID string   `json:"peer_id"`
		Topics []string `json:"topics"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil || !strings.HasPrefix(st.PeerID, "12D3Koo") || len(st.Topics) != 4 {
		t.Fatalf("status: %v %s", err, out)
	}
	// id shows the running node's dialable addresses, each ending in its peer ID once.
	idOut, _, _ := lb(t, "id", "--home", home)
	if !strings.Contains(idOut, "running:  /ip4/127.0.0.1/tcp/") || strings.Count(idOut, "/p2p/") != strings.Count(idOut, "running:") {
		t.Errorf("id of a running node:\n%s", idOut)
	}
	out, stderr, code = lb(t, "ledger", "--home", home, "--json")
	var table struct{ Root string }
	if code != 0 || json.Unmarshal([]byte(out), &table) != nil || len(table.Root) != 64 {
		t.Errorf("ledger: exit %d %s %s", code, out, stderr)
	}
	addr, _ := os.ReadFile(filepath.Join(home, "api.addr"))
	if !strings.HasPrefix(string(addr), "127.0.0.1:") {
		t.Errorf("API not on loopback: %q", addr)
	}
	// A second node on the same home finds the store locked.
	wantError(t, "is a node running with this home?", "run", "--home", home)
	// Another node asking for the API port the first one holds gets a clear error.
	other := initHome(t, "local")
	cfgPath := filepath.Join(other, "config.toml")
	cfg, _ := os.ReadFile(cfgPath)
	port := strings.TrimSpace(string(addr))
	os.WriteFile(cfgPath, bytes.Replace(cfg, []byte("127.0.0.1:0"), []byte(port), 1), 0o644)
	wantError(t, "address already in use", "run", "--home", other)

	stopNode(t, cmd)
	if _, err := os.Stat(filepath.Join(home, "api.addr")); !os.IsNotExist(err) {
		t.Error("api.addr left behind after shutdown")
	}
	logs, _ := os.ReadFile(filepath.Join(home, "node.log"))
	if !bytes.Contains(logs, []byte(`"msg":"node stopped"`)) {
		t.Errorf("no json 'node stopped' line in the log:\n%s", logs)
	}
}
