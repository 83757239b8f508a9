package web_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lowband/lowband/node/web"
	"github.com/lowband/lowband/node/web/webtest"
)

func TestHandlerServesTheDashboard(t *testing.T) {
	srv := httptest.NewServer(web.Handler())
	defer srv.Close()
	for _, c := range []struct {
		path, ctype, has string
		code             int
	}{
		{"/", "text/html", `<script src="app.js"`, 200},
		{"/app.js", "text/javascript", "function poll", 200},
		{"/charts.js", "text/javascript", "function lossChart", 200},
		{"/style.css", "text/css", "--accent", 200},
		{"/nothing-here", "", "", 404},
	} {
		resp, err := http.Get(srv.URL + c.path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.code {
			t.Errorf("GET %s: %s, want %d", c.path, resp.Status, c.code)
			continue
		}
		if !strings.HasPrefix(resp.Header.Get("Content-Type"), c.ctype) || !strings.Contains(string(b), c.has) {
			t.Errorf("GET %s: %s, %d bytes, want %s containing %q", c.path, resp.Header.Get("Content-Type"), len(b), c.ctype, c.has)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
			t.Errorf("GET %s: Content-Security-Policy %q", c.path, csp)
		}
	}
}

// fakeAPI serves the dashboard and a node's API answers that the test sets.
type fakeAPI struct {
	mu      sync.Mutex
	status  map[string]any
	peers   []map[string]any
	ledger  map[string]any // nil: 404, as on a bootstrap node
	ledgerN atomic.Int64   // GET /ledger requests
}

func (f *fakeAPI) set(status map[string]any, peers []map[string]any, ledger map[string]any) {
	f.mu.Lock()
	f.status, f.peers, f.ledger = status, peers, ledger
	f.mu.Unlock()
}

func (f *fakeAPI) handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /", web.Handler())
	reply := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		reply(w, f.status)
	})
	mux.HandleFunc("GET /peers", func(w http.ResponseWriter, _ *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		reply(w, f.peers)
	})
	// A training node's agreement with no round closed, and no slash.
	for path, v := range map[string]any{
		"/agreement": map[string]any{"head": 0, "root": "", "canonical_root": "", "canonical_round": 0, "agrees": true,
			"stale": false, "repairs": 0, "waiting": 0, "total_power": 100, "rounds": []any{}},
		"/evidence": []any{},
	} {
		mux.HandleFunc("GET "+path, func(w http.ResponseWriter, _ *http.Request) {
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.ledger == nil {
				http.Error(w, "a bootstrap node keeps no ledger", http.StatusNotFound)
				return
			}
			reply(w, v)
		})
	}
	mux.HandleFunc("GET /ledger", func(w http.ResponseWriter, _ *http.Request) {
		f.ledgerN.Add(1)
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.ledger == nil {
			http.Error(w, "a bootstrap node keeps no ledger", http.StatusNotFound)
			return
		}
		reply(w, f.ledger)
	})
	return mux
}

const selfID = "12D3KooWSelfSelfSelfSelfSelfSelfSelfSelfSelfSelfSe"

func statusOf(role string, training map[string]any) map[string]any {
	s := map[string]any{"peer_id": selfID, "role": role, "network": "net", "run": "run-1",
		"addresses": []string{}, "connected_peers": 1, "dht_table_size": 1, "topics": []string{},
		"uptime_s": 75.5, "version": "v0.0.0-test"}
	if training != nil {
		s["training"] = training
	}
	return s
}

// freshTraining is the training object of a sim node that has closed no round yet.
func freshTraining() map[string]any {
	return map[string]any{"task": "synthetic", "attestation": "sim", "insecure": true, "next_round": 0,
		"epoch": 0, "initial_loss": nil, "state_root": "", "ledger_root": "", "contribution_bytes": 0,
		"wire_bytes_sent": 0, "wire_bytes_received": 0, "stall_s": 0, "verify_cpu_s": 0,
		"peak_rss_bytes": 0, "dense_bytes_per_round": 6000000, "slashed": []string{}, "rounds": []any{}}
}

// TestDashboardStates: a node with no round yet, a bootstrap node and a node that stopped
// answering each get a page that says so, in a real browser, with nothing on its console
// (and INSECURE readable: its tag's text not in its background's colour);
// a bootstrap node's page never asks for the ledger it does not keep, and a hostile peer ID
// is shown as text, never run as markup.
func TestDashboardStates(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b := webtest.New(t, ctx)
	f := &fakeAPI{}
	srv := httptest.NewServer(f.handler())
	defer srv.Close()

	hostile := `<img src=x onerror="window.pwned=1">`
	f.set(statusOf("node", freshTraining()), []map[string]any{{"id": hostile, "addresses": []string{}, "latency_ms": 1.5}},
		map[string]any{"root": "ab", "head": "", "round": 0, "total_power": 100, "peers": []map[string]any{
			{"peer": selfID, "stake": 100, "balance": 0, "power": 100, "jailed": false, "offences": 0, "contributions": 0, "score": 0}}})
	b.Open(srv.URL + "/")
	b.WaitFor("the no-rounds state", `document.getElementById("loss").innerText.includes("No round closed yet")`, 10*time.Second)
	b.WaitFor("INSECURE shown", `!document.getElementById("insecure").hidden && document.getElementById("node").innerText.includes("sim INSECURE")`, time.Second)
	for _, sel := range []string{"#node .tag.bad", "#insecure"} {
		c := webtest.Eval[[]string](b, `(() => { const s = getComputedStyle(document.querySelector("`+sel+`")); return [s.color, s.backgroundColor]; })()`)
		if c[0] == c[1] {
			t.Errorf("%s is drawn in %s on %s: its text cannot be read", sel, c[0], c[1])
		}
	}
	b.WaitFor("the agreement's no-rounds state", `document.getElementById("agreement").innerText.includes("No round closed yet")`, time.Second)
	b.WaitFor("the stake row", `document.querySelector('#stake tr[data-peer="`+selfID+`"] td.stake')?.innerText === "100"`, time.Second)
	if got := webtest.Eval[string](b, `document.querySelector("#peers td.peer").innerText`); got != hostile {
		t.Errorf("peer shown as %q, want the text %q", got, hostile)
	}
	if webtest.Eval[bool](b, `window.pwned === 1 || document.querySelector("#peers img") !== null`) {
		t.Error("a peer ID became markup in the page")
	}

	f.set(statusOf("bootstrap", nil), []map[string]any{}, nil)
	f.ledgerN.Store(0)
	b.Open(srv.URL + "/")
	b.WaitFor("the bootstrap state", `document.getElementById("loss").innerText.includes("bootstrap node")`, 10*time.Second)
	b.WaitFor("no ledger said", `document.getElementById("stake").innerText.includes("keeps no ledger")`, time.Second)
	b.WaitFor("no agreement said", `document.getElementById("agreement").innerText.includes("does not train")`, time.Second)
	b.WaitFor("no peers said", `document.getElementById("peers").innerText.includes("No peer connected yet")`, time.Second)
	if n := f.ledgerN.Load(); n != 0 {
		t.Errorf("a bootstrap node's page asked for /ledger %d times", n)
	}

	b.ExpectServerDown()
	srv.CloseClientConnections()
	srv.Close()
	b.WaitFor("the stopped state", `document.getElementById("banner").innerText.includes("stopped answering")`, 10*time.Second)
	b.WaitFor("the last data kept", `document.getElementById("peer-id")?.innerText === "`+selfID+`"`, time.Second)
	b.CheckConsole()
}

// trainedTraining is the training object of a node that has closed and scored rounds.
func trainedTraining(rounds int) map[string]any {
	t := freshTraining()
	var rs []any
	for r := range rounds {
		rs = append(rs, map[string]any{"round": r, "loss": 2.0 - 0.1*float64(r), "included": []string{selfID},
			"rejected": map[string]int{}, "evidence": 0, "contribution_bytes": 472, "wire_bytes_sent": 4000,
			"wire_bytes_received": 3000, "stall_s": 0.1, "deadline_s": 10, "ranks": []int{1}, "state_root": "ab",
			"ledger_root": "cd", "closed_at": time.Now().Add(time.Duration(r-rounds) * time.Second).UTC().Format(time.RFC3339)})
	}
	t["rounds"], t["next_round"], t["initial_loss"] = rs, rounds, 2.1
	return t
}

// TestDashboardRendersInFirefox loads the dashboard of a node that has closed three rounds
// in a headless Firefox: its script runs (the page says it is live and draws the loss curve,
// the node, peers and stake from the API's answers) and it saves a screenshot.
func TestDashboardRendersInFirefox(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	f := &fakeAPI{}
	srv := httptest.NewServer(f.handler())
	defer srv.Close()
	ff := webtest.NewFirefox(t, ctx)
	f.set(statusOf("node", trainedTraining(3)), []map[string]any{{"id": "12D3KooWPeer", "addresses": []string{}, "latency_ms": 1.5}},
		map[string]any{"root": "ab", "head": "", "round": 3, "total_power": 100, "peers": []map[string]any{
			{"peer": selfID, "stake": 100, "balance": 30, "power": 100, "jailed": false, "offences": 0, "contributions": 3, "score": 0}}})
	ff.Open(srv.URL + "/")
	ff.WaitFor("the page live", `document.getElementById("conn").textContent === "live"`, 20*time.Second)
	ff.WaitFor("three points on the loss curve", `Number(document.querySelector("#loss svg")?.dataset.points) === 3`, 5*time.Second)
	ff.WaitFor("the node's peer ID", `document.getElementById("peer-id")?.textContent === "`+selfID+`"`, time.Second)
	ff.WaitFor("the peer", `document.querySelector('#peers tr[data-peer="12D3KooWPeer"]')`, time.Second)
	ff.WaitFor("the stake row", `document.querySelector('#stake tr[data-peer="`+selfID+`"] td.balance')?.textContent === "30"`, time.Second)
	ff.WaitFor("the rounds table", `document.querySelectorAll("#rounds tr[data-round]").length === 3`, time.Second)
	ff.Screenshot("lowband-dashboard-firefox.png")
}
