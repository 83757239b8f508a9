package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/node"
)

// fakeAPI serves body (JSON) at each path as a running node's local API would, and
// writes its address to home's api.addr. Other paths answer 404.
func fakeAPI(t *testing.T, home string, bodies map[string]string) {
	t.Helper()
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := bodies[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")
	if err := os.WriteFile(configs.Home{Dir: home}.APIAddrPath(), []byte(addr+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

const statusBody = `{"peer_id": "12D3KooWGRUVh6zGsDLTPHDA5ib1hLwrkdZLkb7H2zxEk2oHVqbU", "role": "node",
  "network": "devnet-0a1b2c3d", "run": "r1", "addresses": ["/ip4/127.0.0.1/tcp/4001/p2p/12D3KooWGRUVh6zGsDLTPHDA5ib1hLwrkdZLkb7H2zxEk2oHVqbU"],
  "connected_peers": 5, "dht_table_size": 12, "topics": ["a", "b", "c", "d"], "uptime_s": 3723.4, "version": "v0.1.0"`

func TestStatusSummaryShowsTrainingWhenPresent(t *testing.T) {
	home := t.TempDir()
	fakeAPI(t, home, map[string]string{"/status": statusBody +
		`, "training": {"next_round": 12, "last_loss": 2.3125, "state_root": "ab12cd", "phase": "waiting", "future": {"x": 1}}}`})
	out, stderr, code := runCLI(t, "status", "--home", home)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"12D3KooWGRUVh6zGsDLTPHDA5ib1hLwrkdZLkb7H2zxEk2oHVqbU", "version v0.1.0", "up 1h2m3s",
		"devnet-0a1b2c3d", "5 connected", "12 in the DHT table", "next_round 12", "last_loss 2.3125", "state_root ab12cd", "phase waiting"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "\n"); n > 8 {
		t.Errorf("summary is %d lines, want a compact one:\n%s", n, out)
	}
}

func TestStatusSummaryWithoutTraining(t *testing.T) {
	home := t.TempDir()
	fakeAPI(t, home, map[string]string{"/status": statusBody + `}`})
	out, stderr, code := runCLI(t, "status", "--home", home)
	if code != 0 || strings.Contains(out, "training") || !strings.Contains(out, "5 connected") {
		t.Errorf("exit %d, stderr %q, summary:\n%s", code, stderr, out)
	}
	// A training object of an unexpected shape is shown as far as it can be, never an error.
	fakeAPI(t, home, map[string]string{"/status": statusBody + `, "training": [1, 2]}`})
	if _, stderr, code := runCLI(t, "status", "--home", home); code != 0 {
		t.Errorf("odd training object: exit %d: %s", code, stderr)
	}
}

func TestStatusJSONUnchanged(t *testing.T) {
	home := t.TempDir()
	fakeAPI(t, home, map[string]string{"/status": statusBody + `}`})
	out, _, code := runCLI(t, "status", "--home", home, "--json")
	var st node.Status
	if err := json.Unmarshal([]byte(statusBody+`}`), &st); err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	_ = writeJSON(&want, st)
	if code != 0 || out != want.String() {
		t.Errorf("status --json: exit %d\n%s\nwant\n%s", code, out, want.String())
	}
}

// TestStatusSummaryShowsAgreement: the node's agreement is one line: head and root,
// the canonical round and root, whether it agrees, rounds repaired, shards waited for,
// resyncs.
func TestStatusSummaryShowsAgreement(t *testing.T) {
	home := t.TempDir()
	root := strings.Repeat("ab", 32)
	other := strings.Repeat("cd", 32)
	fakeAPI(t, home, map[string]string{"/status": statusBody + `, "agreement": {"head": 12, "root": "` + root +
		`", "canonical_root": "` + other + `", "canonical_round": 11, "agrees": false, "repairs": 2, "waiting": 3,
		"resyncs": 1, "last_resync": {"reason": "behind", "from": 5, "to": 12, "peers_head": 11, "seconds": 0.5}}}`})
	out, stderr, code := runCLI(t, "status", "--home", home)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var line string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "agreement") {
			line = l
		}
	}
	for _, want := range []string{"head 12 abababababababab", "canonical 11 cdcdcdcdcdcdcdcd", "differs", "2 rounds repaired", "waiting for 3 shards", "1 resyncs (last: behind, round 5 to 12)"} {
		if !strings.Contains(line, want) {
			t.Errorf("agreement line lacks %q: %q\n%s", want, line, out)
		}
	}
	fakeAPI(t, home, map[string]string{"/status": statusBody + `, "agreement": {"head": 3, "root": "` + root + `", "canonical_root": "", "canonical_round": 0, "agrees": true, "repairs": 0, "waiting": 0}}`})
	out, _, _ = runCLI(t, "status", "--home", home)
	if !strings.Contains(out, "no canonical root yet") {
		t.Errorf("summary before any canonical root:\n%s", out)
	}
}
