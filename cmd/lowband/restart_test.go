package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
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
	return quickNetSteps(t, n, 0)
}

// quickNetSteps is quickNet with innerSteps local steps a round (0: the testnet spec's).
func quickNetSteps(t *testing.T, n, innerSteps int) []string {
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
	edits := map[string]string{
		`(?m)^task = .*$`: "task = 'synthetic'", `(?m)^hidden = .*$`: "hidden = [16]", `(?m)^(context|embed) = .*$`: "",
		`(?m)^target_ratio = .*$`: "target_ratio = 0.0", `(?m)^checkpoint_every = .*$`: "checkpoint_every = 2",
	}
	if innerSteps > 0 {
		edits[`(?m)^inner_steps = .*$`] = fmt.Sprintf("inner_steps = %d", innerSteps)
	}
	for old, new := range edits {
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

var (
	closedLine   = regexp.MustCompile(`msg="round closed" round=(\d+) .*state_root=([0-9a-f]{64})`)
	repairedLine = regexp.MustCompile(`msg="rounds repaired" from=(\d+)`)
	caughtUpLine = regexp.MustCompile(`msg="caught up from round \d+ to round \d+ from round (\d+)[^"]*" .*checkpoint=(\d+)`)
)

// loggedRoots reads the state root of every round a node's log says it closed and did not
// close again in a repair or a catch-up (they replace the rounds from their first on:
// their stored roots are the new ones; a catch-up that synced a checkpoint also drops the
// rounds before it, the store holding one lineage).
func loggedRoots(t *testing.T, home string) map[uint64]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(home, "node.log"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[uint64]string{}
	drop := func(from, before uint64) {
		for r := range out {
			if r >= from || r < before {
				delete(out, r)
			}
		}
	}
	for _, line := range strings.Split(string(data), "\n") {
		if m := closedLine.FindStringSubmatch(line); m != nil {
			r, _ := strconv.ParseUint(m[1], 10, 64)
			out[r] = m[2]
		} else if m := repairedLine.FindStringSubmatch(line); m != nil {
			from, _ := strconv.ParseUint(m[1], 10, 64)
			drop(from, 0)
		} else if m := caughtUpLine.FindStringSubmatch(line); m != nil {
			from, _ := strconv.ParseUint(m[1], 10, 64)
			ck, _ := strconv.ParseUint(m[2], 10, 64)
			drop(from, ck)
		}
	}
	return out
}

// storedRoots opens a stopped node's store and returns the state root of each record and
// the ledger's round. The records must be those of every round from the first stored one
// (0, or the checkpoint a catch-up synced) to the ledger's.
func storedRoots(t *testing.T, home string) (map[uint64]string, uint64) {
	t.Helper()
	s, err := store.Open(configs.Home{Dir: home}.StorePath(), time.Second)
	if err != nil {
		t.Fatalf("the store after kill -9: %v", err)
	}
	defer s.Close()
	roots := map[uint64]string{}
	first := uint64(0)
	err = s.Records(0, func(r uint64, data []byte) error {
		rec, err := incentives.DecodeRecord(data)
		if err == nil {
			if len(roots) == 0 {
				first = r
			}
			roots[r] = hex.EncodeToString(rec.NewRoot)
		}
		return err
	})
	led, lerr := s.State()
	if err != nil || lerr != nil {
		t.Fatalf("the store after kill -9: %v %v", err, lerr)
	}
	if len(roots) > 0 && first+uint64(len(roots)) != led.Round {
		t.Fatalf("%d records from round %d for a ledger at round %d", len(roots), first, led.Round)
	}
	return roots, led.Round
}

// TestKillNineMidRoundResumes: a node of a process testnet killed with SIGKILL at random
// moments of its rounds, and started again each time (on new ports, as the local profile
// listens), starts: its store opens, holds every round the node logged as closed with the
// state root it logged (nothing committed is lost), the node resumes at the store's head
// (replaying the stored rounds checks each root), and within 2 rounds of its restart it
// holds the canonical root: from the second round the others close after it was started
// again, its root of each round, once the round's repairs are done, is the one most of
// the other nodes hold.
func TestKillNineMidRoundResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a process testnet")
	}
	// Rounds of some tens of milliseconds: with the default's few local steps they closed in
	// milliseconds, and the swarm could run past the 1,000 rounds /status lists before the
	// restarted node's rounds were compared.
	homes := quickNetSteps(t, 3, 1000)
	victim := len(homes) - 1
	cmds := startNet(t, homes)
	others := homes[1:victim] // homes[0] is the bootstrap node
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
				t.Fatalf("kill %d: round %d logged with root %s; the store (head %d) has %q", kill+1, r, root, head, roots[r])
			}
		}
		os.Rename(filepath.Join(homes[victim], "node.log"), filepath.Join(homes[victim], "node.log."+strconv.Itoa(kill)))
		var restarted uint64
		for _, h := range others {
			restarted = max(restarted, nextRound(h))
		}
		cmds[victim] = startNode(t, homes[victim])
		// It replays from its latest checkpoint (or genesis) to the store's head.
		want := regexp.MustCompile(`msg="resumed at round ` + strconv.FormatUint(head, 10) + ` from checkpoint (\d+), replayed (\d+) rounds`)
		waitFor(t, 30*time.Second, "the resumed line", func() bool {
			data, _ := os.ReadFile(filepath.Join(homes[victim], "node.log"))
			m := want.FindSubmatch(data)
			if m == nil {
				return false
			}
			c, _ := strconv.ParseUint(string(m[1]), 10, 64)
			n, _ := strconv.ParseUint(string(m[2]), 10, 64)
			if c+n != head {
				t.Fatalf("kill %d: resumed from checkpoint %d replaying %d rounds, want them to reach the head %d", kill+1, c, n, head)
			}
			return true
		})
		// Within 2 rounds of its restart it holds the canonical root: the root most of the
		// other nodes hold, from the second round they close after its restart on.
		from := restarted + 1
		n := canonicalAfter(t, homes[victim], others, from)
		var st node.Status
		apiGet(context.Background(), configs.Home{Dir: homes[victim]}, "/status", &st)
		resyncs, repairs := -1, -1
		if st.Agreement != nil {
			resyncs, repairs = st.Agreement.Resyncs, st.Agreement.Repairs
		}
		t.Logf("kill %d: head %d, %d rounds logged, resumed while the others were at round %d; canonical in %d rounds from %d (repairs %d, resyncs %d since the restart)",
			kill+1, head, len(logged), restarted, n, from, repairs, resyncs)
	}
	head := nextRound(homes[victim])
	waitFor(t, 90*time.Second, "a round closed after the last restart", func() bool { return nextRound(homes[victim]) > head })
}

// roundRoots is the state root of each round a running node reports in /status.
func roundRoots(home string) (map[uint64]string, uint64) {
	var st node.Status
	if apiGet(context.Background(), configs.Home{Dir: home}, "/status", &st) != nil || st.Training == nil {
		return nil, 0
	}
	out := map[uint64]string{}
	for _, r := range st.Training.Rounds {
		out[r.Round] = r.StateRoot
	}
	return out, st.Training.NextRound
}

// canonicalAfter waits until the victim and the others have closed round from+3, then
// until the victim's state root of each round from..from+2 it reports is the root more
// than half of the others report for it, for at most settle: rounds here close in
// milliseconds, faster than records cross and a repair is fetched, so the roots of a
// round are compared once its repairs are done, not at its close (a node that repairs
// rewrites the round's root in /status). It fails when the victim reports none of those
// rounds (the rounds a catch-up replayed are committed, not closed in the loop, and are
// not listed), or when they do not agree within settle, naming the first round that
// differs. It returns how many rounds it compared.
func canonicalAfter(t *testing.T, victim string, others []string, from uint64) int {
	t.Helper()
	const settle = 30 * time.Second
	all := append([]string{victim}, others...)
	waitFor(t, 60*time.Second, fmt.Sprintf("every node to close round %d", from+3), func() bool {
		for _, h := range all {
			if nextRound(h) < from+4 {
				return false
			}
		}
		return true
	})
	var compared int
	var differs string
	deadline := time.Now().Add(settle)
	for {
		compared, differs = compareRoots(victim, others, from)
		if compared < 0 { // a /status that did not answer in time: a loaded node, ask again
			if time.Now().After(deadline) {
				t.Fatalf("the restarted node's /status did not answer for %v", settle)
			}
			time.Sleep(200 * time.Millisecond)
			continue
		}
		if compared == 0 {
			mine, next := roundRoots(victim)
			lo, hi := ^uint64(0), uint64(0)
			for r := range mine {
				lo, hi = min(lo, r), max(hi, r)
			}
			t.Fatalf("the restarted node reports none of rounds %d-%d (its /status lists %d rounds, %d to %d; next round %d)", from, from+2, len(mine), lo, hi, next)
		}
		if differs == "" {
			return compared
		}
		if time.Now().After(deadline) {
			t.Fatalf("not settled in %v: %s", settle, differs)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// compareRoots compares the victim's state root of rounds from..from+2 with the root most
// of the others report: how many rounds it compared (-1 when the victim's /status did not
// answer), and the first that differs ("" if none).
func compareRoots(victim string, others []string, from uint64) (int, string) {
	mine, _ := roundRoots(victim)
	if mine == nil {
		return -1, ""
	}
	votes := map[uint64]map[string]int{}
	for _, h := range others {
		roots, _ := roundRoots(h)
		for r := from; r <= from+2; r++ {
			if votes[r] == nil {
				votes[r] = map[string]int{}
			}
			votes[r][roots[r]]++
		}
	}
	compared := 0
	for r := from; r <= from+2; r++ {
		root, ok := mine[r]
		if !ok {
			continue
		}
		compared++
		if 2*votes[r][root] <= len(others) {
			return compared, fmt.Sprintf("round %d: the restarted node holds %s; the others hold %v", r, root, votes[r])
		}
	}
	return compared, ""
}
