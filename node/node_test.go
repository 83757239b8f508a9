package node

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lowband/lowband/configs"
)

// newHome is a local home on the devnet spec with the synthetic task, which a node loads
// and trains in moments.
func newHome(t *testing.T) (configs.Home, *configs.Config, *configs.Spec) {
	t.Helper()
	h, c, s := newHomeWith(t, bytes.Replace(configs.DevnetSpec, []byte(`task = "charlm"`), []byte(`task = "synthetic"`), 1))
	if s.Training.Task != configs.TaskSynthetic {
		t.Fatalf("test home on task %q", s.Training.Task)
	}
	return h, c, s
}

// newHomeWith is a local home on the given network spec.
func newHomeWith(t *testing.T, spec []byte) (configs.Home, *configs.Config, *configs.Spec) {
	t.Helper()
	h := configs.Home{Dir: filepath.Join(t.TempDir(), "home")}
	if err := h.Init(configs.InitOptions{Profile: configs.ProfileLocal, Spec: spec}); err != nil {
		t.Fatal(err)
	}
	c, s, err := h.Load()
	if err != nil {
		t.Fatal(err)
	}
	return h, c, s
}

func get(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	return b
}

func TestNodeAPI(t *testing.T) {
	h, c, s := newHomeWith(t, configs.DevnetSpec) // the default network: charlm on Go's Opticks
	ctx, cancel := context.WithCancel(context.Background())
	n, err := New(ctx, Options{Home: h, Config: c, Spec: s, Logger: slog.New(slog.DiscardHandler), Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()

	addr, err := os.ReadFile(h.APIAddrPath())
	if err != nil || strings.TrimSpace(string(addr)) != n.APIAddr() {
		t.Fatalf("api.addr %q, want %q (%v)", addr, n.APIAddr(), err)
	}
	base := "http://" + n.APIAddr()
	var st Status
	if err := json.Unmarshal(get(t, base+"/status"), &st); err != nil {
		t.Fatal(err)
	}
	if st.PeerID != n.ID().String() || st.Network != s.NetworkID() || st.Role != configs.RoleNode || len(st.Topics) != 4 || len(st.Addresses) == 0 {
		t.Errorf("status: %+v", st)
	}
	if tr := st.Training; tr == nil || tr.Task != configs.TaskCharLM || tr.Attestation != configs.KindSim || !tr.Insecure || tr.DenseBytesPerRound <= 0 {
		t.Errorf("status training: %+v", tr)
	}
	var ps []Peer
	if err := json.Unmarshal(get(t, base+"/peers"), &ps); err != nil || len(ps) != 0 {
		t.Errorf("peers of a lone node: %v %v", ps, err)
	}
	metrics := string(get(t, base+"/metrics"))
	for _, m := range []string{"go_goroutines", "libp2p_"} {
		if !strings.Contains(metrics, m) {
			t.Errorf("/metrics has no %s", m)
		}
	}

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if _, err := os.Stat(h.APIAddrPath()); !os.IsNotExist(err) {
		t.Error("api.addr left behind")
	}
	if _, err := http.Get(base + "/status"); err == nil {
		t.Error("API still answers after Run returned")
	}
}

func TestNodeRefusesBadRole(t *testing.T) {
	h, c, s := newHome(t)
	_, err := New(context.Background(), Options{Home: h, Config: c, Spec: s, Role: "leader", Logger: slog.New(slog.DiscardHandler)})
	if err == nil || !strings.Contains(err.Error(), "unknown role") {
		t.Fatalf("got %v", err)
	}
}

func TestPeerCache(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "peers.json")
	got, err := loadPeerCache(p)
	if err != nil || len(got) != 0 {
		t.Fatalf("missing cache: %v %v", got, err)
	}
	os.WriteFile(p, []byte("{not json"), 0o644)
	if _, err := loadPeerCache(p); err == nil {
		t.Error("damaged cache not reported")
	}
	os.WriteFile(p, []byte(`[{"id":"12D3KooWGRUVh6zGsDLTPHDA5ib1hLwrkdZLkb7H2zxEk2oHVqbU","addrs":["/ip4/127.0.0.1/tcp/1","garbage"]},{"id":"bad","addrs":["/ip4/127.0.0.1/tcp/2"]}]`), 0o644)
	got, err = loadPeerCache(p)
	if err != nil || len(got) != 1 || len(got[0].Addrs) != 1 {
		t.Fatalf("want the one valid peer with its one valid address, got %v %v", got, err)
	}
	if err := savePeerCache(p, "", got, newRand()); err != nil {
		t.Fatal(err)
	}
	again, err := loadPeerCache(p)
	if err != nil || len(again) != 1 || again[0].ID != got[0].ID {
		t.Fatalf("round trip: %v %v", again, err)
	}
}

func TestNodeLedgerAndRoles(t *testing.T) {
	h, c, s := newHome(t)
	quiet := slog.New(slog.DiscardHandler)

	n, err := New(context.Background(), Options{Home: h, Config: c, Spec: s, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	var table struct {
		Root  string `json:"root"`
		Round uint64 `json:"round"`
	}
	if err := json.Unmarshal(get(t, "http://"+n.APIAddr()+"/ledger"), &table); err != nil || len(table.Root) != 64 {
		t.Errorf("ledger of a fresh node: %+v %v", table, err)
	}
	// The store is held by the running node: a second one on the same home cannot open it.
	c2 := *c
	if _, err := New(context.Background(), Options{Home: h, Config: &c2, Spec: s, Logger: quiet}); err == nil {
		t.Error("two nodes opened one store")
	}
	n.Close()

	// A bootstrap node keeps no ledger and says so.
	b, err := New(context.Background(), Options{Home: h, Config: c, Spec: s, Role: configs.RoleBootstrap, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + b.APIAddr() + "/ledger")
	if err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("bootstrap /ledger: %v %v", resp, err)
	}
	b.Close()
}

func TestNodeRefusesProducerTheNetworkRejects(t *testing.T) {
	h, c, s := newHome(t)
	c.Attest.Producer = configs.KindSEVSNP // the devnet accepts only sim
	_, err := New(context.Background(), Options{Home: h, Config: c, Spec: s, Logger: slog.New(slog.DiscardHandler)})
	if err == nil || !strings.Contains(err.Error(), "does not accept") {
		t.Fatalf("got %v", err)
	}
	// The public (production) profile refuses a network that accepts simulated evidence.
	c.Profile, c.Attest.Producer = configs.ProfilePublic, configs.KindSim
	_, err = New(context.Background(), Options{Home: h, Config: c, Spec: s, Logger: slog.New(slog.DiscardHandler)})
	if err == nil || !strings.Contains(err.Error(), "simulated") {
		t.Fatalf("public profile on a sim network: %v", err)
	}
}
