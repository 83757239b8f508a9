package node

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
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
	api := "http://" + swarm[0].APIAddr()
	ledgers := watchLedger(t, ctx, api)

	b.Open(api + "/")
	b.WaitFor("two scored rounds on the loss curve", `Number(document.querySelector("#loss svg")?.dataset.points) >= 2`, 60*time.Second)
	b.WaitEqual("the peers table as GET /peers says", peersShown, func(string) string { return peerRows(t, api) }, 10*time.Second)
	b.WaitEqual("the stake table as GET /ledger said at its round", stakeShown, ledgers.at, 20*time.Second)
	b.Screenshot("lowband-dashboard.png")

	b.Open("http://" + boot.APIAddr() + "/")
	b.WaitFor("the bootstrap node's page", `document.getElementById("loss").innerText.includes("does not train")`, 10*time.Second)
	b.CheckConsole()
}

// peersShown is the peers table as "peer" lines, sorted.
const peersShown = `[...document.querySelectorAll("#peers tr[data-peer]")].map((r) => r.dataset.peer).sort().join("\n")`

// stakeShown is the stake table as its ledger round, then "peer stake balance power" lines.
const stakeShown = `document.querySelector("#stake table")?.dataset.round + "\n" +
	[...document.querySelectorAll("#stake tr[data-peer]")].map((r) =>
		[r.dataset.peer, ...["stake", "balance", "power"].map((c) => r.querySelector("td." + c).innerText)].join(" ")).sort().join("\n")`

// peerRows is what GET /peers says, as peersShown shows it.
func peerRows(t *testing.T, api string) string {
	var ps []Peer
	if err := json.Unmarshal(get(t, api+"/peers"), &ps); err != nil {
		t.Fatal(err)
	}
	rows := make([]string, len(ps))
	for i, p := range ps {
		rows[i] = p.ID
	}
	slices.Sort(rows)
	return strings.Join(rows, "\n")
}

// ledgerHistory is what GET /ledger said at each round it was seen at, as stakeShown shows
// it. The ledger moves on with every round, faster than the page refreshes, so the page is
// compared with the ledger at the round the page shows.
type ledgerHistory struct {
	mu   sync.Mutex
	seen map[string]string // round -> rows
}

// watchLedger polls GET /ledger every 20 ms until the test ends.
func watchLedger(t *testing.T, ctx context.Context, api string) *ledgerHistory {
	h := &ledgerHistory{seen: map[string]string{}}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if round, rows, err := ledgerRows(ctx, api); err == nil {
				h.mu.Lock()
				h.seen[round] = round + "\n" + rows
				h.mu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return h
}

// at is the ledger at the round the page shows, or what it last saw of that round if it
// missed it.
func (h *ledgerHistory) at(shown string) string {
	round, _, _ := strings.Cut(shown, "\n")
	h.mu.Lock()
	defer h.mu.Unlock()
	if rows, ok := h.seen[round]; ok {
		return rows
	}
	return fmt.Sprintf("(the ledger at round %s was not seen; %d rounds were)", round, len(h.seen))
}

func ledgerRows(ctx context.Context, api string) (round, rows string, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, api+"/ledger", nil)
	if err != nil {
		return "", "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	var tab incentives.Table
	if err := json.NewDecoder(resp.Body).Decode(&tab); err != nil {
		return "", "", err
	}
	out := make([]string, len(tab.Peers))
	for i, p := range tab.Peers {
		out[i] = fmt.Sprintf("%s %d %d %d", p.Peer, p.Stake, p.Balance, p.Power)
	}
	slices.Sort(out)
	return fmt.Sprint(tab.Round), strings.Join(out, "\n"), nil
}
