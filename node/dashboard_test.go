package node

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/node/web/webtest"
)

// TestDashboardShowsTheSwarm opens the dashboard of a training node of a small swarm, one
// of whose three nodes sends NaN shards, in a headless Chromium, as an operator would: the loss
// curve grows to two scored rounds with the network's canonical loss drawn over it, the
// peers and stake tables say what GET /peers and GET /ledger say, the NaN sender's slash
// links to its evidence, which GET /evidence/{id} decodes, the agreement table says what
// GET /agreement says, the bootstrap node's page says it does not train, and nothing is
// logged to the browser's console. It saves a screenshot of the training node's page.
func TestDashboardShowsTheSwarm(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	b := webtest.New(t, ctx)
	swarm, _, boot := startSwarmWith(t, ctx, 3, func(s *configs.Spec) {
		s.Testing.AllowAdversaries = true
		s.Incentives.JailRounds = 1000
		// Rounds of a second or so rather than tens a second: the page refreshes every 2 s,
		// and its tables are compared with the API's answers at one round.
		s.Training.InnerSteps = 1000
	}, func(i int, o *Options) {
		if i == 2 {
			// Every node proves its offence from any one of its shards, in every round
			// (an equivocation is seen only by a node that gets both of its shards).
			o.Adversary = AdvNaN
		}
	})
	api := "http://" + swarm[0].APIAddr()
	ledgers := watchLedger(t, ctx, api)

	b.Open(api + "/")
	b.WaitFor("two scored rounds on the loss curve", `Number(document.querySelector("#loss svg")?.dataset.points) >= 2`, 60*time.Second)
	b.WaitFor("the canonical loss on the curve", `Number(document.querySelector("#loss svg .canon")?.dataset.points) >= 1`, 30*time.Second)
	b.WaitEqual("the peers table as GET /peers says", peersShown, func(string) string { return peerRows(t, api) }, 10*time.Second)
	b.WaitEqual("the stake table as GET /ledger said at its round", stakeShown, ledgers.at, 20*time.Second)
	bad := swarm[2].ID().String()
	b.WaitFor("the NaN sender's slash linked to its evidence", `document.querySelector('#stake tr[data-peer="`+bad+`"] a.evidence')`, 40*time.Second)
	checkEvidenceLink(t, b, api, bad)
	b.WaitEqual("the agreement table as GET /agreement says", agreementShown, func(shown string) string { return agreementRows(t, api, shown) }, 20*time.Second)
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

// checkEvidenceLink follows the first evidence link of peer's stake row: GET of its address
// is the evidence, decoded, of invalid content sent by that peer, and GET /evidence lists it.
func checkEvidenceLink(t *testing.T, b *webtest.Browser, api, peer string) {
	t.Helper()
	href := webtest.Eval[string](b, `document.querySelector('#stake tr[data-peer="`+peer+`"] a.evidence').getAttribute("href")`)
	var v EvidenceView
	getJSON(t, api+href, &v)
	if v.Kind != "invalid_content" || v.Peer != peer || "/evidence/"+v.ID != href || v.Penalty == nil {
		t.Fatalf("the slash links to %s, which says %+v", href, v)
	}
	var slashes []Slash
	getJSON(t, api+"/evidence", &slashes)
	if !slices.ContainsFunc(slashes, func(s Slash) bool { return s.Evidence == v.ID && s.Peer == peer }) {
		t.Fatalf("GET /evidence does not list %s: %+v", v.ID, slashes)
	}
}

// agreementShown is the agreement table as "round own-root majority" lines, oldest first.
const agreementShown = `[...document.querySelectorAll("#agreement tr[data-round]")].map((r) =>
	[r.dataset.round, r.querySelector("td.own-root").title, r.querySelector("td.majority").title || "-"].join(" ")).reverse().join("\n")`

// agreementRows is what GET /agreement says of the rounds the page shows, as agreementShown
// shows them. The page refreshes every 2 s and a round may close in between, pushing the
// oldest rounds it shows out of the API's window: those are taken as shown, as long as
// they are fewer than half of the rows (the rest are compared).
func agreementRows(t *testing.T, api, shown string) string {
	var v AgreementView
	getJSON(t, api+"/agreement", &v)
	byRound := map[string]AgreementRound{}
	oldest := uint64(math.MaxUint64)
	for _, r := range v.Rounds {
		byRound[fmt.Sprint(r.Round)] = r
		oldest = min(oldest, r.Round)
	}
	lines := strings.Split(shown, "\n")
	var rows []string
	for _, line := range lines {
		round, _, _ := strings.Cut(line, " ")
		r, ok := byRound[round]
		if n, err := strconv.ParseUint(round, 10, 64); !ok && err == nil && n < oldest && 2*(len(rows)+1) < len(lines) {
			rows = append(rows, line) // left the API's window since the page's refresh
			continue
		}
		if !ok {
			return fmt.Sprintf("(round %s shown, not in GET /agreement)", round)
		}
		maj := r.Majority
		if maj == "" {
			maj = "-"
		}
		rows = append(rows, fmt.Sprintf("%d %s %s", r.Round, r.Root, maj))
	}
	if shown == "" {
		return "(no round shown)"
	}
	return strings.Join(rows, "\n")
}
