package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/lowband/lowband/node"
)

// maxStatusFile caps a saved status file, as apiGet caps the answer it came from.
const maxStatusFile = 16 << 20

// testnetSummary is summary.json: the rounds every node closed, and per node what it
// measured over them.
type testnetSummary struct {
	Rounds             int           `json:"rounds"`
	DenseBytesPerRound int64         `json:"dense_bytes_per_round"`
	Nodes              []nodeSummary `json:"nodes"`
}

type nodeSummary struct {
	PeerID            string     `json:"peer_id"`
	Loss              []*float64 `json:"loss"` // null for a round the node could not score
	StateRoot         string     `json:"state_root"`
	LedgerRoot        string     `json:"ledger_root"`
	ContributionBytes int64      `json:"contribution_bytes"`
	WireBytesSent     int64      `json:"wire_bytes_sent"`
	WireBytesReceived int64      `json:"wire_bytes_received"`
	StallS            float64    `json:"stall_s"`
	VerifyCPUS        float64    `json:"verify_cpu_s"`
	PeakRSSBytes      int64      `json:"peak_rss_bytes"`
	Included          [][]string `json:"included"`
	Adversary         string     `json:"adversary"`
	Slashed           []string   `json:"slashed"`
}

// namedStatus is a node's last status (GET /status, as `lowband status --json` prints it)
// and the name the table gives it.
type namedStatus struct {
	Name   string
	Status node.Status
}

// readStatusFile reads a status file saved by `lowband status --json`; the node is named
// after the home directory holding it.
func readStatusFile(path string) (namedStatus, error) {
	ns := namedStatus{Name: filepath.Base(filepath.Dir(path))}
	f, err := os.Open(path)
	if err != nil {
		return ns, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxStatusFile+1))
	if err != nil {
		return ns, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(data) > maxStatusFile {
		return ns, fmt.Errorf("%s: larger than %d bytes", path, maxStatusFile)
	}
	if err := json.Unmarshal(data, &ns.Status); err != nil {
		return ns, fmt.Errorf("%s: %w", path, err)
	}
	t := ns.Status.Training
	if t == nil {
		return ns, fmt.Errorf("%s: %s does not train (its status has no training object)", path, ns.Name)
	}
	// The last rounds may be closed but not scored yet: they count once their loss is known.
	for len(t.Rounds) > 0 && t.Rounds[len(t.Rounds)-1].Loss == nil {
		t.Rounds = t.Rounds[:len(t.Rounds)-1]
	}
	return ns, nil
}

func readStatusFiles(paths []string) ([]namedStatus, error) {
	if len(paths) == 0 {
		return nil, fmt.Errorf("no status files given")
	}
	out := make([]namedStatus, len(paths))
	for i, p := range paths {
		var err error
		if out[i], err = readStatusFile(p); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// window is the rounds [from, from+n) that every node has closed and scored, at most limit
// of them from the first (limit 0: no limit). Each node's status lists its last closed
// rounds in order.
func window(nodes []namedStatus, limit int) (from uint64, n int) {
	var hi uint64
	for i, ns := range nodes {
		rs := ns.Status.Training.Rounds
		if len(rs) == 0 {
			return 0, 0
		}
		first, last := rs[0].Round, rs[len(rs)-1].Round
		if i == 0 || first > from {
			from = first
		}
		if i == 0 || last < hi {
			hi = last
		}
	}
	if hi < from {
		return from, 0
	}
	n = int(min(hi-from+1, 1<<30))
	if limit > 0 && n > limit {
		n = limit
	}
	return from, n
}

// summarise builds summary.json from the nodes' last statuses: the window of rounds every
// node closed (the first limit of them when limit > 0), per node its held-out loss, roots
// at the window's end and contributors in each of those rounds, its own contribution bytes
// and stall summed over them, and its process-wide counters (wire bytes, verification CPU,
// peak memory) as last served.
func summarise(nodes []namedStatus, limit int) (*testnetSummary, error) {
	from, n := window(nodes, limit)
	s := &testnetSummary{Rounds: n, Nodes: make([]nodeSummary, len(nodes))}
	for i, ns := range nodes {
		t := ns.Status.Training
		s.DenseBytesPerRound = max(s.DenseBytesPerRound, t.DenseBytesPerRound)
		out := nodeSummary{
			PeerID: ns.Status.PeerID, Loss: []*float64{}, Included: [][]string{},
			StateRoot: t.StateRoot, LedgerRoot: t.LedgerRoot,
			WireBytesSent: t.WireBytesSent, WireBytesReceived: t.WireBytesReceived,
			VerifyCPUS: t.VerifyCPUS, PeakRSSBytes: t.PeakRSSBytes,
			Slashed:   nonNil(t.Slashed),
			Adversary: t.Adversary,
		}
		for k, r := range roundsFrom(t.Rounds, from, n) {
			if r.Round != from+uint64(k) {
				return nil, fmt.Errorf("%s: round %d is missing from its status (found %d)", ns.Name, from+uint64(k), r.Round)
			}
			out.Loss = append(out.Loss, r.Loss)
			out.Included = append(out.Included, nonNil(r.Included))
			out.ContributionBytes += int64(r.ContributionBytes)
			out.StallS += r.StallS
			out.StateRoot, out.LedgerRoot = r.StateRoot, r.LedgerRoot
		}
		s.Nodes[i] = out
	}
	return s, nil
}

// roundsFrom returns the n rounds of rs starting at round from (fewer if rs has a gap,
// which the caller reports).
func roundsFrom(rs []node.RoundStatus, from uint64, n int) []node.RoundStatus {
	for i, r := range rs {
		if r.Round == from {
			return rs[i:min(i+n, len(rs))]
		}
	}
	return nil
}

func testnetRoundsCommand() *cli.Command {
	return &cli.Command{
		Name:      "rounds",
		Usage:     "print how many rounds every node has closed, from saved status files",
		UsageText: "lowband testnet rounds STATUS.json...",
		Action: func(c *cli.Context) error {
			nodes, err := readStatusFiles(c.Args().Slice())
			if err != nil {
				return err
			}
			from, n := window(nodes, 0)
			fmt.Fprintln(c.App.Writer, int(from)+n)
			return nil
		},
	}
}

func testnetSummaryCommand() *cli.Command {
	return &cli.Command{
		Name:  "summary",
		Usage: "write summary.json and print a table from the nodes' saved status files",
		UsageText: "lowband testnet summary --out FILE [--rounds R] STATUS.json...\n\n" +
			"Each STATUS.json is a node's `lowband status --json`, saved in its home directory.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Required: true, Usage: "summary file to write"},
			&cli.IntFlag{Name: "rounds", Usage: "summarise the first R rounds every node closed (0: all of them)"},
		},
		Action: func(c *cli.Context) error {
			nodes, err := readStatusFiles(c.Args().Slice())
			if err != nil {
				return err
			}
			s, err := summarise(nodes, c.Int("rounds"))
			if err != nil {
				return err
			}
			data, err := json.MarshalIndent(s, "", "  ")
			if err != nil {
				return err
			}
			if err := os.WriteFile(c.String("out"), append(data, '\n'), 0o644); err != nil {
				return err
			}
			return writeTable(c.App.Writer, nodes, s)
		},
	}
}
