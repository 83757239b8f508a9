package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// doctorOut runs `lowband doctor` as a process and asserts a clean report: no stack
// trace, nothing on stderr, one "LEVEL  check  detail" line per check.
func doctorOut(t *testing.T, args ...string) (string, int) {
	t.Helper()
	out, stderr, code := lb(t, append([]string{"doctor"}, args...)...)
	if stderr != "" || strings.Contains(out, "goroutine ") || strings.Contains(out, "panic") {
		t.Errorf("doctor %v: stderr %q, stdout:\n%s", args, stderr, out)
	}
	if strings.HasPrefix(out, "{") {
		return out, code // --json
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.HasPrefix(line, "OK ") && !strings.HasPrefix(line, "SKIP ") && !strings.HasPrefix(line, "WARN ") &&
			!strings.HasPrefix(line, "FAIL ") {
			t.Errorf("doctor %v: a line that is not a check: %q", args, line)
			break
		}
	}
	return out, code
}

func wantLine(t *testing.T, out, prefix string, words ...string) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, prefix) {
			for _, w := range words {
				if !strings.Contains(line, w) {
					t.Errorf("line %q lacks %q", line, w)
				}
			}
			return
		}
	}
	t.Errorf("no line starting %q in:\n%s", prefix, out)
}

func TestDoctorOnAMissingHome(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nothing-here")
	out, code := doctorOut(t, "--home", missing)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	wantLine(t, out, "FAIL  home", "does not exist", "lowband init --home "+missing)
}

func TestDoctorOnABrokenConfig(t *testing.T) {
	home := initHome(t, "local")
	cfg := filepath.Join(home, "config.toml")
	good, _ := os.ReadFile(cfg)
	os.WriteFile(cfg, []byte(strings.Replace(string(good), "format = 'text'", "format = 'xml'", 1)), 0o644)
	out, code := doctorOut(t, "--home", home)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	wantLine(t, out, "FAIL  config", "log.format")
}

func TestDoctorWithDeadBootstrapPeersAndATakenPort(t *testing.T) {
	home := initHome(t, "local")
	dead := "/ip4/127.0.0.1/tcp/1/p2p/12D3KooWGRUVh6zGsDLTPHDA5ib1hLwrkdZLkb7H2zxEk2oHVqbU"
	if _, stderr, code := lb(t, "bootstrap", "add", "--home", home, dead); code != 0 {
		t.Fatal(stderr)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	cfg := filepath.Join(home, "config.toml")
	good, _ := os.ReadFile(cfg)
	os.WriteFile(cfg, []byte(strings.Replace(string(good), "/ip4/127.0.0.1/tcp/0", fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", port), 1)), 0o644)

	out, code := doctorOut(t, "--home", home)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	wantLine(t, out, "FAIL  bootstrap", "no connection after", "connection refused", "firewall")
	wantLine(t, out, "FAIL  listen", fmt.Sprintf("tcp 127.0.0.1:%d is in use by another process", port))
	wantLine(t, out, "WARN  node", "not running")

	out, code = doctorOut(t, "--home", home, "--json")
	var report struct {
		Checks []struct{ Check, Level, Detail, Fix string }
		Failed bool
	}
	if err := json.Unmarshal([]byte(out), &report); err != nil || code != 1 || !report.Failed || len(report.Checks) < 10 {
		t.Errorf("doctor --json: exit %d, %v:\n%s", code, err, out)
	}
}

func TestDoctorReadsTheRunningNode(t *testing.T) {
	home := initHome(t, "local")
	fakeAPI(t, home, map[string]string{
		"/status":  statusBody + `}`,
		"/metrics": "lowband_p2p_gossip_topic_peers{kind=\"shards\"} 2\nlowband_p2p_gossip_mesh_peers{kind=\"shards\"} 2\n",
	})
	out, _, _ := runCLI(t, "doctor", "--home", home)
	wantLine(t, out, "OK    node", "running as 12D3KooWGRUVh6zGsDLTPHDA5ib1hLwrkdZLkb7H2zxEk2oHVqbU", "5 peers connected")
	wantLine(t, out, "OK    dht", "12 peers")
	wantLine(t, out, "OK    gossip shards", "2 peers in the mesh")
	wantLine(t, out, "SKIP  gossip records", "does not report")
}

func TestDoctorWithNoNetworkAtAll(t *testing.T) {
	if exec.Command("unshare", "-n", "true").Run() != nil {
		t.Skip("cannot make a network namespace here (needs unshare and privileges)")
	}
	home := initHome(t, "local")
	if _, stderr, code := lb(t, "bootstrap", "add", "--home", home, "/ip4/203.0.113.9/tcp/4001/p2p/12D3KooWGRUVh6zGsDLTPHDA5ib1hLwrkdZLkb7H2zxEk2oHVqbU"); code != 0 {
		t.Fatal(stderr)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("unshare", "-n", lowbandBin, "doctor", "--home", home) // a namespace with no interface up
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || stderr.Len() > 0 {
		t.Errorf("doctor without a network: %v, stderr %q", err, stderr.String())
	}
	wantLine(t, stdout.String(), "FAIL  bootstrap", "no connection after", "network is unreachable")
	wantLine(t, stdout.String(), "OK    disk")
}
