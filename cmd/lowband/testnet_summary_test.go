package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Canned statuses as `lowband status --json` prints them: node1 has closed rounds 0-4,
// node2 rounds 0-4 but not scored round 4 yet (its loss is null).
var cannedStatus = []string{"testdata/testnet/node1/status.json", "testdata/testnet/node2/status.json"}

func readSummary(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func keys(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// values dereferences losses (NaN for null).
func values(ls []*float64) []float64 {
	var out []float64
	for _, l := range ls {
		if l == nil {
			out = append(out, math.NaN())
		} else {
			out = append(out, *l)
		}
	}
	return out
}

func TestSummaryHasExactlyTheIssuesFields(t *testing.T) {
	out := filepath.Join(t.TempDir(), "summary.json")
	if _, stderr, code := runCLI(t, append([]string{"testnet", "summary", "--out", out}, cannedStatus...)...); code != 0 {
		t.Fatal(stderr)
	}
	m := readSummary(t, out)
	if got, want := keys(m), []string{"dense_bytes_per_round", "nodes", "rounds"}; !slices.Equal(got, want) {
		t.Errorf("summary keys %v, want %v", got, want)
	}
	node := m["nodes"].([]any)[0].(map[string]any)
	want := []string{"adversary", "contribution_bytes", "included", "ledger_root", "loss", "peak_rss_bytes", "peer_id",
		"slashed", "stall_s", "state_root", "verify_cpu_s", "wire_bytes_received", "wire_bytes_sent"}
	if got := keys(node); !slices.Equal(got, want) {
		t.Errorf("node keys %v, want %v", got, want)
	}
	// Lists are lists, never null, even when the node slashed nobody.
	if _, ok := node["slashed"].([]any); !ok {
		t.Errorf("slashed is %v, want a list", node["slashed"])
	}
}

func TestSummaryCoversTheRoundsEveryNodeClosed(t *testing.T) {
	nodes, err := readStatusFiles(cannedStatus)
	if err != nil {
		t.Fatal(err)
	}
	s, err := summarise(nodes, 0)
	if err != nil {
		t.Fatal(err)
	}
	if s.Rounds != 4 || s.DenseBytesPerRound != 5821044 {
		t.Fatalf("rounds %d, dense %d; want 4 (node2 closed 0-3), 5821044", s.Rounds, s.DenseBytesPerRound)
	}
	n1 := s.Nodes[0]
	if !slices.Equal(values(n1.Loss), []float64{5.0, 4.5, 4.0, 3.5}) {
		t.Errorf("node1 loss %v: want its rounds 0-3 only", n1.Loss)
	}
	// Roots are those after the last common round, not node1's latest (round 4).
	if n1.StateRoot != strings.Repeat("03", 32) || n1.LedgerRoot != strings.Repeat("a3", 32) {
		t.Errorf("node1 roots %s %s: want round 3's", n1.StateRoot, n1.LedgerRoot)
	}
	if n1.ContributionBytes != 3000+3001+3002+3003 || n1.StallS != 1 {
		t.Errorf("node1 contribution %d, stall %v: want the sums over rounds 0-3 (12006, 1)", n1.ContributionBytes, n1.StallS)
	}
	if n1.WireBytesSent != 1000000 || n1.WireBytesReceived != 1200000 || n1.VerifyCPUS != 0.75 || n1.PeakRSSBytes != 200<<20 {
		t.Errorf("node1 counters %+v: want the node's totals", n1)
	}
	if len(n1.Included) != 4 || len(n1.Included[0]) != 1 || len(n1.Included[1]) != 2 {
		t.Errorf("node1 included %v", n1.Included)
	}
	if s.Nodes[1].PeerID != "12D3KooWRBy97UB99e3J6hiPesre1MZeuNQvfan4gBziswrRJsNK" || s.Nodes[1].Adversary != "" {
		t.Errorf("node2 %+v", s.Nodes[1])
	}
}

func TestSummaryFirstRRounds(t *testing.T) {
	nodes, err := readStatusFiles(cannedStatus)
	if err != nil {
		t.Fatal(err)
	}
	s, err := summarise(nodes, 2)
	if err != nil {
		t.Fatal(err)
	}
	if s.Rounds != 2 || !slices.Equal(values(s.Nodes[1].Loss), []float64{5.1, 4.6}) || s.Nodes[1].StateRoot != strings.Repeat("01", 32) {
		t.Errorf("rounds %d, node2 loss %v root %s: want rounds 0-1 and round 1's root", s.Rounds, s.Nodes[1].Loss, s.Nodes[1].StateRoot)
	}
}

func TestRoundsCountsWhatEveryNodeClosed(t *testing.T) {
	out, stderr, code := runCLI(t, append([]string{"testnet", "rounds"}, cannedStatus...)...)
	if code != 0 || strings.TrimSpace(out) != "4" {
		t.Errorf("rounds: %q %q exit %d; want 4", out, stderr, code)
	}
}

// writeStatus saves st as dir/name/status.json.
func writeStatus(t *testing.T, dir, name string, st any) string {
	t.Helper()
	data, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
		t.Fatal(err)
	}
	return writeTemp(t, filepath.Join(dir, name), "status.json", data)
}

func TestStatusWithoutTrainingRefused(t *testing.T) {
	p := writeStatus(t, t.TempDir(), "boot", map[string]any{"peer_id": "12D3KooWGRUVh6zGsDLTPHDA5ib1hLwrkdZLkb7H2zxEk2oHVqbU", "role": "bootstrap"})
	_, stderr, code := runCLI(t, "testnet", "rounds", p)
	if code != 1 || !strings.Contains(stderr, "boot does not train") {
		t.Errorf("exit %d, %q; want a clear refusal naming boot", code, stderr)
	}
}

func TestSummaryRoundMissingReported(t *testing.T) {
	nodes, err := readStatusFiles(cannedStatus)
	if err != nil {
		t.Fatal(err)
	}
	rs := nodes[0].Status.Training.Rounds
	nodes[0].Status.Training.Rounds = slices.Delete(slices.Clone(rs), 2, 3)
	if _, err := summarise(nodes, 0); err == nil || !strings.Contains(err.Error(), "round 2 is missing") {
		t.Errorf("summarise with a gap: %v; want round 2 reported missing", err)
	}
}

func TestTableSaysWhetherRootsAgree(t *testing.T) {
	out, stderr, code := runCLI(t, append([]string{"testnet", "summary", "--out", filepath.Join(t.TempDir(), "s.json")}, cannedStatus...)...)
	if code != 0 {
		t.Fatal(stderr)
	}
	for _, want := range []string{"state root after 4 rounds: all 2 nodes agree (030303030303)", "5.500->3.500 (-36%)",
		"node2  12D3KooWRBy97UB99e3J6hiPesre1MZeuNQvfan4gBziswrRJsNK", "below one dense fp32 pseudo-gradient"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}

	nodes, _ := readStatusFiles(cannedStatus)
	nodes[1].Status.Training.Rounds[3].StateRoot = strings.Repeat("ff", 32)
	s, err := summarise(nodes, 0)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := writeTable(&b, nodes, s); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "state root after 4 rounds: the nodes DISAGREE (2 different roots)") {
		t.Errorf("table hides a split:\n%s", b.String())
	}
}

// TestUnscoredRoundNotCountedYet: a round whose held-out loss is not known yet (null) is not
// summarised as a loss of 0; the summary waits for it.
func TestUnscoredRoundNotCountedYet(t *testing.T) {
	nodes, err := readStatusFiles(cannedStatus)
	if err != nil {
		t.Fatal(err)
	}
	s, err := summarise(nodes, 0)
	if err != nil {
		t.Fatal(err)
	}
	if s.Rounds != 4 || len(s.Nodes[1].Loss) != 4 {
		t.Errorf("rounds %d, node2 loss %v: want 4 rounds, node2's round 4 not scored yet", s.Rounds, s.Nodes[1].Loss)
	}
}

// TestUnscoredRoundBeforeScoredOnesIsNull: a round whose evaluation failed (its loss stays
// null while later rounds are scored) is summarised as null, never as a loss of 0.
func TestUnscoredRoundBeforeScoredOnesIsNull(t *testing.T) {
	nodes, err := readStatusFiles(cannedStatus)
	if err != nil {
		t.Fatal(err)
	}
	nodes[0].Status.Training.Rounds[1].Loss = nil
	s, err := summarise(nodes, 0)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(s.Nodes[0].Loss)
	if string(data) != "[5,null,4,3.5]" {
		t.Errorf("node1 loss %s, want [5,null,4,3.5]", data)
	}
}
