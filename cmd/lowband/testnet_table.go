package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/lowband/lowband/node"
)

// maxTableRows is how many rounds the loss table shows; longer runs show every k-th round
// and the last.
const maxTableRows = 40

// writeTable prints the summary for a person: loss per round per node, then per node its
// roots, bytes, stall, verification CPU and memory, then whether the roots agree and how
// the bytes compare with dense fp32 exchanges.
func writeTable(w io.Writer, nodes []namedStatus, s *testnetSummary) error {
	if s.Rounds == 0 {
		_, err := fmt.Fprintln(w, "no round was closed by every node")
		return err
	}
	fmt.Fprintf(w, "held-out loss per closed round; included: contributors aggregated, as each node saw them\n")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	writeLossRows(tw, nodes, s)
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "node\tloss\tstate_root\tledger_root\tcontrib_B/round\twire_B/round\tstall_s\tverify_cpu_s\tpeak_rss_MiB\tslashed\t")
	for i, n := range s.Nodes {
		t := nodes[i].Status.Training
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%.1f\t%.2f\t%.0f\t%d\t\n", nodes[i].Name, lossDrop(t.InitialLoss, n.Loss),
			short(n.StateRoot), short(n.LedgerRoot), n.ContributionBytes/int64(s.Rounds), wirePerRound(t),
			n.StallS, n.VerifyCPUS, float64(n.PeakRSSBytes)/(1<<20), len(n.Slashed))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for i, n := range s.Nodes {
		fmt.Fprintf(w, "%s  %s%s\n", nodes[i].Name, n.PeerID, adversaryNote(n.Adversary))
	}
	writeAgreement(w, s)
	writeSlashing(w, nodes, s)
	writeRatios(w, nodes, s)
	return nil
}

func writeLossRows(tw io.Writer, nodes []namedStatus, s *testnetSummary) {
	head := []string{"round"}
	for _, ns := range nodes {
		head = append(head, ns.Name)
	}
	fmt.Fprintln(tw, strings.Join(append(head, "included"), "\t")+"\t")
	from, _ := window(nodes, s.Rounds)
	step := (s.Rounds + maxTableRows - 1) / maxTableRows
	for k := 0; k < s.Rounds; k++ {
		if k%step != 0 && k != s.Rounds-1 {
			continue
		}
		row := []string{fmt.Sprint(from + uint64(k))}
		var inc []string
		for _, n := range s.Nodes {
			row = append(row, fmtLoss(n.Loss[k]))
			inc = append(inc, fmt.Sprint(len(n.Included[k])))
		}
		fmt.Fprintln(tw, strings.Join(append(row, strings.Join(inc, " ")), "\t")+"\t")
	}
}

func fmtLoss(l *float64) string {
	if l == nil {
		return "-"
	}
	return fmt.Sprintf("%.4f", *l)
}

// lossDrop is "initial->last (-x%)" over the scored losses; without an initial loss, from
// the first round's.
func lossDrop(initialLoss *float64, loss []*float64) string {
	var scored []float64
	for _, l := range loss {
		if l != nil {
			scored = append(scored, *l)
		}
	}
	if len(scored) == 0 {
		return "-"
	}
	initial := scored[0]
	if initialLoss != nil {
		initial = *initialLoss
	}
	last := scored[len(scored)-1]
	return fmt.Sprintf("%.3f->%.3f (%+.0f%%)", initial, last, 100*(last-initial)/initial)
}

// wirePerRound is the node's wire bytes, sent plus received, per round it closed.
func wirePerRound(t *node.TrainingStatus) int64 {
	closed := int64(t.Rounds[len(t.Rounds)-1].Round) + 1
	return (t.WireBytesSent + t.WireBytesReceived) / closed
}

func short(root string) string {
	if len(root) > 12 {
		return root[:12]
	}
	if root == "" {
		return "-"
	}
	return root
}

func adversaryNote(kind string) string {
	if kind == "" {
		return ""
	}
	return "  (adversary: " + kind + ")"
}

// writeAgreement says whether every honest node (one running no adversary mode) ended the
// window with one state root and one ledger root.
func writeAgreement(w io.Writer, s *testnetSummary) {
	var states, ledgers []string
	who := "nodes"
	for _, n := range s.Nodes {
		if n.Adversary != "" {
			who = "honest nodes"
			continue
		}
		states, ledgers = append(states, n.StateRoot), append(ledgers, n.LedgerRoot)
	}
	for _, r := range []struct {
		what  string
		roots []string
	}{{"state root", states}, {"ledger root", ledgers}} {
		slices.Sort(r.roots)
		if distinct := slices.Compact(r.roots); len(distinct) == 1 {
			fmt.Fprintf(w, "%s after %d rounds: all %d %s agree (%s)\n", r.what, s.Rounds, len(r.roots), who, short(distinct[0]))
		} else {
			fmt.Fprintf(w, "%s after %d rounds: the %s DISAGREE (%d different roots)\n", r.what, s.Rounds, who, len(distinct))
		}
	}
}

// writeSlashing says, when any node runs an adversary mode or anyone was slashed, how many
// honest nodes slashed each adversary and which honest peers any honest node slashed.
func writeSlashing(w io.Writer, nodes []namedStatus, s *testnetSummary) {
	var honest []nodeSummary
	adversaries := false
	for _, n := range s.Nodes {
		if n.Adversary == "" {
			honest = append(honest, n)
		} else {
			adversaries = true
		}
	}
	slashedBy := func(peer string) int {
		k := 0
		for _, h := range honest {
			if slices.Contains(h.Slashed, peer) {
				k++
			}
		}
		return k
	}
	var wronged []string
	for i, n := range s.Nodes {
		k := slashedBy(n.PeerID)
		switch {
		case n.Adversary != "":
			fmt.Fprintf(w, "adversary %s (%s): slashed by %d of %d honest nodes\n", nodes[i].Name, n.Adversary, k, len(honest))
		case k > 0:
			wronged = append(wronged, fmt.Sprintf("%s by %d", nodes[i].Name, k))
		}
	}
	if adversaries || len(wronged) > 0 {
		if len(wronged) == 0 {
			wronged = []string{"none"}
		}
		fmt.Fprintf(w, "honest peers slashed: %s\n", strings.Join(wronged, ", "))
	}
}

// writeRatios compares the bytes with a dense fp32 pseudo-gradient (one contribution) and
// with a dense ring all-reduce, which moves 2(N-1)/N of it each way per node and round.
func writeRatios(w io.Writer, nodes []namedStatus, s *testnetSummary) {
	d := float64(s.DenseBytesPerRound)
	if d == 0 {
		return
	}
	var maxContrib, maxWire int64
	from, _ := window(nodes, s.Rounds)
	for _, ns := range nodes {
		for _, r := range roundsFrom(ns.Status.Training.Rounds, from, s.Rounds) {
			maxContrib = max(maxContrib, int64(r.ContributionBytes))
		}
		maxWire = max(maxWire, wirePerRound(ns.Status.Training))
	}
	n := float64(len(nodes))
	ring := 2 * 2 * (n - 1) / n * d
	if maxContrib > 0 {
		fmt.Fprintf(w, "contribution: at most %d bytes in a round, %.0fx below one dense fp32 pseudo-gradient (%d bytes)\n",
			maxContrib, d/float64(maxContrib), s.DenseBytesPerRound)
	}
	if maxWire > 0 {
		fmt.Fprintf(w, "wire: at most %d bytes per node per round (sent+received), %.0fx below a dense fp32 ring all-reduce (%.0f bytes)\n",
			maxWire, ring/float64(maxWire), ring)
	}
}
