package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/node"
)

// processesUnder lists the PIDs whose command line mentions dir.
func processesUnder(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc to look for leftover processes")
	}
	var pids []string
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmdline, []byte(dir)) && bytes.Contains(cmdline, []byte("run")) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

func TestTestnetScript(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command("bash", "../../scripts/testnet.sh", "-n", "5", "-b", lowbandBin, "-d", dir, "-t", "90", "--once")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("testnet.sh: %v\n%s", err, out)
	}
	if !bytes.Contains(out, []byte("all 5 nodes see each other")) {
		t.Errorf("no summary line:\n%s", out)
	}
	if left := processesUnder(t, dir); len(left) > 0 {
		t.Errorf("teardown left processes behind: %v", left)
	}
	// Every process ran on the one network the script generated.
	network := regexp.MustCompile(`network (testnet-[0-9a-f]{8})`).FindSubmatch(out)
	if network == nil {
		t.Fatalf("the script named no generated network:\n%s", out)
	}
	for _, name := range []string{"boot", "node1", "node5"} {
		logs, _ := os.ReadFile(filepath.Join(dir, name, "node.log"))
		if !bytes.Contains(logs, []byte("node stopped")) {
			t.Errorf("%s did not shut down cleanly:\n%s", name, logs)
		}
		if !bytes.Contains(logs, append([]byte("network="), network[1]...)) {
			t.Errorf("%s did not run on %s:\n%s", name, network[1], logs)
		}
	}
}

// startScript starts testnet.sh with args and returns it once its output has said want.
func startScript(t *testing.T, want string, args ...string) (*exec.Cmd, *bufio.Scanner, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command("bash", append([]string{"../../scripts/testnet.sh", "-b", lowbandBin}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var seen bytes.Buffer
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		seen.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), want) {
			return cmd, sc, &seen
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	t.Fatalf("testnet.sh never said %q:\n%s", want, seen.String())
	return nil, nil, nil
}

// TestTestnetScriptNodeDeathFails: a node that dies while the network trains ends the run
// with exit status 1, a message naming it, and no process left behind.
func TestTestnetScriptNodeDeathFails(t *testing.T) {
	dir := t.TempDir()
	cmd, sc, seen := startScript(t, "Ctrl-C stops every node", "-n", "2", "-r", "1000", "-d", dir, "-t", "90")
	var victim int
	for _, p := range processesUnder(t, filepath.Join(dir, "node2")) {
		victim, _ = strconv.Atoi(p)
	}
	if victim == 0 {
		cmd.Process.Kill()
		t.Fatal("no node2 process")
	}
	syscall.Kill(victim, syscall.SIGKILL)
	for sc.Scan() {
		seen.WriteString(sc.Text() + "\n")
	}
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Errorf("testnet.sh after a node died: %v, want exit status 1", err)
	}
	if want := fmt.Sprintf("node2 (pid %d) died", victim); !strings.Contains(seen.String(), want) {
		t.Errorf("output lacks %q:\n%s", want, seen.String())
	}
	if left := processesUnder(t, dir); len(left) > 0 {
		t.Errorf("left processes behind: %v", left)
	}
}

// TestTestnetScriptCtrlC: Ctrl-C stops every node and the script promptly, even while a
// node is slow to answer the script's status requests (here every status request hangs for
// a minute once the swarm trains, through a wrapper around the binary).
func TestTestnetScriptCtrlC(t *testing.T) {
	dir := t.TempDir()
	slow := filepath.Join(dir, "slow")
	wrapper := filepath.Join(t.TempDir(), "lowband")
	script := fmt.Sprintf("#!/bin/sh\nif [ \"$1\" = status ] && [ -e %q ]; then sleep 60; fi\nexec %q \"$@\"\n", slow, lowbandBin)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "../../scripts/testnet.sh", "-n", "2", "-b", wrapper, "-d", dir, "-t", "90")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var seen bytes.Buffer
	sc := bufio.NewScanner(stdout)
	running := false
	for sc.Scan() {
		seen.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), "Ctrl-C stops every node") {
			running = true
			break
		}
	}
	if !running {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the swarm never came up:\n%s", seen.String())
	}
	if n := len(processesUnder(t, dir)); n != 3 {
		t.Errorf("want 3 node processes while running, found %d", n)
	}
	if err := os.WriteFile(slow, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // the script polls every second: a status request now hangs
	cmd.Process.Signal(syscall.SIGINT)
	sent := time.Now()
	rest := make(chan string, 1)
	go func() {
		var b strings.Builder
		for sc.Scan() {
			b.WriteString(sc.Text() + "\n")
		}
		rest <- b.String()
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
		for _, p := range processesUnder(t, dir) {
			if pid, err := strconv.Atoi(p); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		t.Fatalf("testnet.sh did not exit within 30s of Ctrl-C; its output:\n%s%s", seen.String(), <-rest)
	}
	out := <-rest
	if !strings.Contains(out, "testnet: stopped 3 processes") {
		t.Errorf("no line saying the nodes were stopped after Ctrl-C; the output:\n%s%s", seen.String(), out)
	}
	t.Logf("testnet.sh exited %v after Ctrl-C", time.Since(sent).Round(time.Millisecond))
	if left := processesUnder(t, dir); len(left) > 0 {
		t.Errorf("Ctrl-C left processes behind: %v", left)
	}
}

func peerIDOf(t *testing.T, home string) string {
	t.Helper()
	out, stderr, code := lb(t, "id", "--home", home, "--json")
	if code != 0 {
		t.Fatal(stderr)
	}
	var id struct {
		PeerID string `json:"peer_id"`
	}
	if err := json.Unmarshal([]byte(out), &id); err != nil {
		t.Fatal(err)
	}
	return id.PeerID
}

// sees reports whether the node in home is connected to every one of ids.
func sees(t *testing.T, home string, ids ...string) bool {
	var ps []node.Peer
	if apiGet(context.Background(), configs.Home{Dir: home}, "/peers", &ps) != nil {
		return false
	}
	for _, id := range ids {
		if !slices.ContainsFunc(ps, func(p node.Peer) bool { return p.ID == id }) {
			return false
		}
	}
	return true
}

// TestBootstrapDeath: once the swarm has formed, the bootstrap node may die; the nodes stay
// connected, and a node restarted afterwards finds the others through its cached peers.
func TestBootstrapDeath(t *testing.T) {
	boot := initHome(t, "local")
	bootCmd := startNode(t, boot, "--role", "bootstrap")
	out, _, _ := lb(t, "status", "--home", boot, "--json")
	var st struct{ Addresses []string }
	json.Unmarshal([]byte(out), &st)
	var bootAddr string
	for _, a := range st.Addresses {
		if strings.Contains(a, "/tcp/") {
			bootAddr = a
		}
	}
	homes := make([]string, 3)
	ids := make([]string, 3)
	cmds := make([]*exec.Cmd, 3)
	for i := range homes {
		homes[i] = initHome(t, "local")
		if _, stderr, code := lb(t, "bootstrap", "add", "--home", homes[i], bootAddr); code != 0 {
			t.Fatal(stderr)
		}
		ids[i] = peerIDOf(t, homes[i])
		cmds[i] = startNode(t, homes[i])
	}
	waitFor(t, 60*time.Second, "the swarm to form", func() bool {
		return sees(t, homes[0], ids[1], ids[2]) && sees(t, homes[1], ids[0], ids[2]) && sees(t, homes[2], ids[0], ids[1])
	})

	bootCmd.Process.Kill()
	bootCmd.Wait()
	// Still connected without the bootstrap node, checked several times over a few seconds.
	for range 3 {
		time.Sleep(time.Second)
		if !sees(t, homes[1], ids[0], ids[2]) || !sees(t, homes[2], ids[0], ids[1]) {
			t.Fatal("nodes lost each other after the bootstrap node died")
		}
	}

	stopNode(t, cmds[0]) // saves the peers cache
	if _, err := os.Stat(filepath.Join(homes[0], "peers.json")); err != nil {
		t.Fatalf("no peers cache after a clean stop: %v", err)
	}
	startNode(t, homes[0])
	waitFor(t, 60*time.Second, "the restarted node to reconnect through its cached peers", func() bool {
		return sees(t, homes[0], ids[1], ids[2])
	})
	// Its listen port is new, so the others cannot have dialled it: the connection came from
	// its cache (the bootstrap node is dead), and it says so.
	waitFor(t, 10*time.Second, "the restarted node to log that it reached the network", func() bool {
		logs, _ := os.ReadFile(filepath.Join(homes[0], "node.log"))
		return bytes.Contains(logs, []byte("connected to the network"))
	})
}
