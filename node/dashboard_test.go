package node

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/node/web/webtest"
)

// TestDashboardShowsTheSwarm opens the dashboard of a training node of a small swarm in a
// headless Chromium, as an operator would: the loss curve grows to two scored rounds, the
// peers and stake tables say what GET /peers and GET /ledger say, the bootstrap node's page
// says it does not train, and nothing is logged to the browser's console. It saves a
// screenshot of the training node's page.
func TestDashboardShowsTheSwarm(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	b := webtest.New(t, ctx)
	swarm, _, boot := startSwarmAt(t, ctx, 2)
	n := swarm[0]
	api := "http://" + n.APIAddr()

	b.Open(api + "/")
	b.WaitFor("two scored rounds on the loss curve", `Number(document.querySelector("#loss svg")?.dataset.points) >= 2`, 60*time.Second)
	b.WaitEqual("the peers table as GET /peers says", func() string { return peerRows(t, api) }, tableRows("peers", "latency"), 10*time.Second)
	for _, col := range []string{"stake", "balance", "power"} {
		b.WaitEqual("the stake table's "+col+" as GET /ledger says", func() string { return ledgerRows(t, api, col) }, tableRows("stake", col), 10*time.Second)
	}
	b.Screenshot("lowband-dashboard.png")

	b.Open("http://" + boot.APIAddr() + "/")
	b.WaitFor("the bootstrap node's page", `document.getElementById("loss").innerText.includes("does not train")`, 10*time.Second)
	b.CheckConsole()
}

// tableRows is a JavaScript expression: the rows of the dashboard table in section id as
// "peer=value" lines, value the cell of class col (only its presence, for latency).
func tableRows(id, col string) string {
	cell := fmt.Sprintf(`r.querySelector("td.%s").innerText`, col)
	if col == "latency" {
		cell = `""`
	}
	return fmt.Sprintf(`[...document.querySelectorAll("#%s tr[data-peer]")].map((r) => r.dataset.peer + "=" + %s).sort().join("\n")`, id, cell)
}

// peerRows is what GET /peers says, as tableRows("peers", "latency") shows it.
func peerRows(t *testing.T, api string) string {
	var ps []Peer
	if err := json.Unmarshal(get(t, api+"/peers"), &ps); err != nil {
		t.Fatal(err)
	}
	if len(ps) == 0 {
		t.Fatal("GET /peers: no peers")
	}
	rows := make([]string, len(ps))
	for i, p := range ps {
		rows[i] = p.ID + "="
	}
	slices.Sort(rows)
	return strings.Join(rows, "\n")
}

// ledgerRows is what GET /ledger says of col, as tableRows("stake", col) shows it.
func ledgerRows(t *testing.T, api, col string) string {
	var tab incentives.Table
	if err := json.Unmarshal(get(t, api+"/ledger"), &tab); err != nil {
		t.Fatal(err)
	}
	rows := map[string]uint64{}
	for _, p := range tab.Peers {
		rows[p.Peer] = map[string]uint64{"stake": p.Stake, "balance": p.Balance, "power": p.Power}[col]
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(rows)) {
		out = append(out, fmt.Sprintf("%s=%d", k, rows[k]))
	}
	return strings.Join(out, "\n")
}
