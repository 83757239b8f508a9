package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/lowband/lowband/node"
)

func statusCommand() *cli.Command {
	return &cli.Command{
		Name:  "status",
		Usage: "show the running node's status: a short summary, or with --json the API's status object",
		Flags: []cli.Flag{homeFlag, jsonFlag},
		Action: func(c *cli.Context) error {
			h, err := home(c)
			if err != nil {
				return err
			}
			var raw json.RawMessage
			if err := apiGet(c.Context, h, "/status", &raw); err != nil {
				return err
			}
			st, err := decodeStatus(raw)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return writeJSON(c.App.Writer, st)
			}
			return printStatus(c.App.Writer, st, trainingOf(raw))
		},
	}
}

// decodeStatus reads a status answer. A training object of another shape than this
// build's (a node of another version) is left out rather than refused: the summary
// shows it as far as it can (trainingOf).
func decodeStatus(raw json.RawMessage) (node.Status, error) {
	var st node.Status
	err := json.Unmarshal(raw, &st)
	if err != nil {
		var fields map[string]json.RawMessage
		if json.Unmarshal(raw, &fields) == nil {
			delete(fields, "training")
			b, _ := json.Marshal(fields) // re-encoding decoded JSON cannot fail
			st, err = node.Status{}, json.Unmarshal(b, &st)
		}
	}
	if err != nil {
		return node.Status{}, fmt.Errorf("GET /status: decoding the answer: %w", err)
	}
	return st, nil
}

// printStatus writes the compact summary: who, where, how connected, and the training
// state when the node reports one.
func printStatus(w io.Writer, st node.Status, training []string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "peer id\t%s\n", st.PeerID)
	fmt.Fprintf(tw, "node\trole %s, version %s, up %s\n", st.Role, st.Version,
		(time.Duration(st.UptimeSeconds) * time.Second).String())
	fmt.Fprintf(tw, "network\t%s, run %s\n", st.Network, st.Run)
	fmt.Fprintf(tw, "peers\t%d connected, %d in the DHT table, %d topics joined\n",
		st.ConnectedPeers, st.DHTTableSize, len(st.Topics))
	if len(st.Addresses) > 0 {
		more := ""
		if len(st.Addresses) > 1 {
			more = fmt.Sprintf(" (and %d more: lowband id)", len(st.Addresses)-1)
		}
		fmt.Fprintf(tw, "address\t%s%s\n", st.Addresses[0], more)
	}
	if len(training) > 0 {
		fmt.Fprintf(tw, "training\t%s\n", strings.Join(training, ", "))
	}
	if a := st.Agreement; a != nil {
		fmt.Fprintf(tw, "agreement\t%s\n", agreementLine(a))
	}
	return tw.Flush()
}

// agreementLine is the node's agreement in a line: head and root, the canonical round
// and root, whether this node agrees, the rounds it repaired, the shards it waits for and
// its resyncs.
func agreementLine(a *node.AgreementStatus) string {
	short := func(root string) string { return root[:min(len(root), 16)] }
	parts := []string{fmt.Sprintf("head %d %s", a.Head, short(a.Root))}
	switch {
	case a.Canonical == "":
		parts = append(parts, "no canonical root yet")
	case a.Agrees:
		parts = append(parts, fmt.Sprintf("canonical %d %s, agrees", a.CanonicalRound, short(a.Canonical)))
	default:
		parts = append(parts, fmt.Sprintf("canonical %d %s, differs", a.CanonicalRound, short(a.Canonical)))
	}
	if a.Stale {
		parts = append(parts, "stale: a repair left the window (needs a checkpoint)")
	}
	parts = append(parts, fmt.Sprintf("%d rounds repaired", a.Repairs))
	if a.Waiting > 0 {
		parts = append(parts, fmt.Sprintf("waiting for %d shards", a.Waiting))
	}
	if r := a.LastResync; r != nil {
		parts = append(parts, fmt.Sprintf("%d resyncs (last: %s, round %d to %d)", a.Resyncs, r.Reason, r.From, r.To))
	}
	return strings.Join(parts, ", ")
}

// trainingFirst are the training fields shown first, in this order; others follow by name.
var trainingFirst = []string{"state", "phase", "round", "next_round", "last_loss", "loss", "state_root", "root"}

// trainingOf reads the optional "training" object of a status answer leniently: each
// field whose value is a string, number or boolean becomes "name value"; anything else
// (absent, another shape, nested values) is left out.
func trainingOf(raw json.RawMessage) []string {
	var top struct {
		Training map[string]json.RawMessage `json:"training"`
	}
	if json.Unmarshal(raw, &top) != nil {
		return nil
	}
	keys := make([]string, 0, len(top.Training))
	for k := range top.Training {
		keys = append(keys, k)
	}
	rank := func(k string) int {
		if i := slices.Index(trainingFirst, k); i >= 0 {
			return i
		}
		return len(trainingFirst)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if d := rank(a) - rank(b); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	var out []string
	for _, k := range keys {
		if v, ok := scalar(top.Training[k]); ok {
			out = append(out, k+" "+v)
		}
	}
	return out
}

// scalar renders a JSON string, number or boolean as text; ok is false for anything else.
func scalar(v json.RawMessage) (string, bool) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "", false
	}
	switch v[0] {
	case '"':
		var s string
		return s, json.Unmarshal(v, &s) == nil
	case '{', '[', 'n':
		return "", false
	}
	return string(v), true
}
