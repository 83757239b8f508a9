package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/node"
	"github.com/lowband/lowband/node/store"
)

// quickNet makes a bootstrap home and n node homes on one local network spec: the
// synthetic task, short deadlines, the local state saved every other round. It returns the
// homes, bootstrap first.
func quickNet(t *testing.T, n int) []string {
	t.Helper()
	boot := initHome(t, "local")
	homes, ids, key := localNet(t, n)
	base := filepath.Join(filepath.Dir(homes[0]), "base.toml")
	if _, stderr, code := lb(t, append([]string{"testnet", "spec", "--base", filepath.Join(homes[0], "network.toml"),
		"--sim-key", key, "--out", base, "--deadline-min", "1", "--deadline-max", "4", "--batch-size", "16"}, ids...)...); code != 0 {
		t.Fatal(stderr)
	}
	data, err := os.ReadFile(base)
	if err != nil {
		t.Fatal(err)
	}
	spec := string(data)
	for old, new := range map[string]string{
		`(?m)^task = .*$`: "task = 'synthetic'", `(?m)^hidden = .*$`: "hidden = [16]", `(?m)^(context|embed) = .*$`: "",
		`(?m)^target_ratio = .*$`: "target_ratio = 0.0", `(?m)^checkpoint_every = .*$`: "checkpoint_every = 2",
	} {
		spec = regexp.MustCompile(old).ReplaceAllString(spec, new)
	}
	path := filepath.Join(filepath.Dir(homes[0]), "network.toml")
	if err := os.WriteFile(path, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	all := append([]string{boot}, homes...)
	if _, stderr, code := lb(t, append([]string{"testnet", "install", "--spec", path, "--sim-key", key}, all...)...); code != 0 {
		t.Fatal(stderr)
	}
	return all
}

// startNet starts the bootstrap node and the nodes of homes (bootstrap first).
func startNet(t *testing.T, homes []string) []*exec.Cmd {
	t.Helper()
	cmds := []*exec.Cmd{startNode(t, homes[0], "--role", "bootstrap")}
	out, _, _ := lb(t, "status", "--home", homes[0], "--json")
	var st struct{ Addresses []string }
	json.Unmarshal([]byte(out), &st)
	var bootAddr string
	for _, a := range st.Addresses {
		if strings.Contains(a, "/tcp/") {
			bootAddr = a
		}
	}
	for _, h := range homes[1:] {
		if _, stderr, code := lb(t, "bootstrap", "add", "--home", h, bootAddr); code != 0 {
			t.Fatal(stderr)
		}
		cmds = append(cmds, startNode(t, h))
	}
	return cmds
}

// nextRound is the first open round a running node reports (0 when it does not answer).
func nextRound(home string) uint64 {
	var st node.Status
	if apiGet(context.Background(), configs.Home{Dir: home}, "/status", &st) != nil || st.Training == nil {
		return 0
	}
	return st.Training.NextRound
}

var closedLine = regexp.MustCompile(`msg="round closed" round=(\d+) .*state_root=([0-9a-f]{64})`)

// loggedRoots reads the state root of every round a node's log says it closed.
func loggedRoots(t *testing.T, home string) map[uint64]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(home, "node.log"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[uint64]string{}
	for _, m := range closedLine.FindAllStringSubmatch(string(data), -1) {
		r, _ := strconv.ParseUint(m[1], 10, 64)
		out[r] = m[2]
	}
	return out
}

// storedRoots opens a stopped node's store and returns the state root of each record and
// the ledger's round.
func storedRoots(t *testing.T, home string) ([]string, uint64) {
	t.Helper()
	s, err := store.Open(configs.Home{Dir: home}.StorePath(), time.Second)
	if err != nil {
		t.Fatalf("the store after kill -9: %v", err)
	}
	defer s.Close()
	var roots []string
	err = s.Records(0, func(r uint64, data []byte) error {
		rec, err := incentives.DecodeRecord(data)
		if err == nil {
			roots = append(roots, hex.EncodeToString(rec.NewRoot))
		}
		return err
	})
	led, lerr := s.State()
	if err != nil || lerr != nil {
		t.Fatalf("the store after kill -9: %v %v", err, lerr)
	}
	if uint64(len(roots)) != led.Round {
		t.Fatalf("%d records for a ledger at round %d", len(roots), led.Round)
	}
	return roots, led.Round
}

// TestKillNineMidRoundResumes: a node of a process testnet killed with SIGKILL at random
// moments of its rounds, and started again each time, starts: its store opens, holds every
// round the node logged as closed with the state root it logged, and the node resumes at
// the store's head (replaying the stored rounds checks each root) and closes rounds again.
func TestKillNineMidRoundResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a process testnet")
	}
	homes := quickNet(t, 3)
	cmds := startNet(t, homes)
	victim := len(homes) - 1
	seed := uint64(time.Now().UnixNano())
	t.Logf("kill points drawn from seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 11))
	for kill := range 3 {
		waitFor(t, 90*time.Second, "the node to close two rounds", func() bool { return len(loggedRoots(t, homes[victim])) >= 2 })
		time.Sleep(time.Duration(rng.IntN(1500)) * time.Millisecond)
		cmds[victim].Process.Kill()
		cmds[victim].Wait()

		logged := loggedRoots(t, homes[victim])
		roots, head := storedRoots(t, homes[victim])
		if len(logged) == 0 {
			t.Fatalf("kill %d: no round closed in the log", kill+1)
		}
		for r, root := range logged {
			if r >= head || roots[r] != root {
				t.Fatalf("kill %d: round %d logged with root %s; the store (head %d) has %v", kill+1, r, root, head, roots[min(r, head-1)])
			}
		}
		os.Rename(filepath.Join(homes[victim], "node.log"), filepath.Join(homes[victim], "node.log."+strconv.Itoa(kill)))
		cmds[victim] = startNode(t, homes[victim])
		// from a kept checkpoint (or 0), through every stored round after it up to the head
		want := regexp.MustCompile(`msg="resumed at round ` + strconv.FormatUint(head, 10) + ` from checkpoint (\d+), replayed (\d+) rounds`)
		waitFor(t, 30*time.Second, "the resumed line", func() bool {
			data, _ := os.ReadFile(filepath.Join(homes[victim], "node.log"))
			m := want.FindSubmatch(data)
			if m == nil {
				return false
			}
			c, _ := strconv.ParseUint(string(m[1]), 10, 64)
			n, _ := strconv.ParseUint(string(m[2]), 10, 64)
			return c+n == head
		})
		t.Logf("kill %d: head %d, %d rounds logged, resumed", kill+1, head, len(logged))
	}
	head := nextRound(homes[victim])
	waitFor(t, 90*time.Second, "a round closed after the last restart", func() bool { return nextRound(homes[victim]) > head })
}
