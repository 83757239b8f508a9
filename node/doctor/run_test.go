package doctor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/node"
)

// offline is an Env with no running node, no network and a healthy machine.
func offline(h configs.Home) Env {
	return Env{
		Home:        h,
		Running:     func(context.Context) (*Running, error) { return nil, errors.New("no api.addr in the home") },
		Prober:      fakeProber{},
		FreeBytes:   func(string) (uint64, error) { return 50 << 30, nil },
		ClockSynced: func() (bool, error) { return true, nil },
	}
}

// find returns the results of a check.
func find(rs []Result, check string) []Result {
	var out []Result
	for _, r := range rs {
		if r.Check == check {
			out = append(out, r)
		}
	}
	return out
}

func TestRunOnAMissingHome(t *testing.T) {
	h := configs.Home{Dir: filepath.Join(t.TempDir(), "nothing")}
	rs := Run(context.Background(), offline(h))
	if len(rs) != 2 || rs[0].Level != Fail || rs[1].Level != Skip || !Failed(rs) {
		t.Errorf("doctor on a missing home: %+v", rs)
	}
}

func TestRunOnABrokenConfig(t *testing.T) {
	h := newHome(t)
	os.WriteFile(h.ConfigPath(), []byte("profile = 'local'\n[log]\nformat = 'xml'\n"), 0o644)
	rs := Run(context.Background(), offline(h))
	want(t, "config", find(rs, "config")[0], Fail, "config.toml:3: log.format")
	want(t, "what needs the config", find(rs, "network and ports")[0], Skip, "needs a valid config.toml")
	want(t, "the rest still runs", find(rs, "disk")[0], OK, "GiB free")
	if !Failed(rs) {
		t.Error("a broken config did not fail")
	}
}

func TestRunWithEveryBootstrapPeerDeadAndNoNetwork(t *testing.T) {
	h := newHome(t)
	c, _ := loaded(t, h)
	c.P2P.Bootstrap = []string{addrOf(newID(t)), addrOf(newID(t))}
	if err := configs.WriteConfig(h.ConfigPath(), c); err != nil {
		t.Fatal(err)
	}
	rs := Run(context.Background(), offline(h))
	boot := find(rs, "bootstrap")
	if len(boot) != 2 || !Failed(rs) {
		t.Fatalf("bootstrap lines: %+v", boot)
	}
	for _, r := range boot {
		want(t, "dead bootstrap peer", r, Fail, "no connection", "firewall")
	}
	want(t, "node", find(rs, "node")[0], Warn, "not running")
	want(t, "dht", find(rs, "dht")[0], Skip, "no node is running")
}

func TestRunWithAPortTaken(t *testing.T) {
	h := newHome(t)
	c, _ := loaded(t, h)
	c.P2P.Listen = []string{fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", takeTCP(t))}
	if err := configs.WriteConfig(h.ConfigPath(), c); err != nil {
		t.Fatal(err)
	}
	rs := Run(context.Background(), offline(h))
	want(t, "taken port", find(rs, "listen")[0], Fail, "in use by another process")
	if !Failed(rs) {
		t.Error("a taken port did not fail")
	}
}

func TestRunHealthyRunningNodeHasNoFailure(t *testing.T) {
	h := newHome(t)
	env := offline(h)
	env.Running = func(context.Context) (*Running, error) {
		return running(node.Status{PeerID: "12D3KooWX", UptimeSeconds: 90, DHTTableSize: 3, ConnectedPeers: 3, Topics: []string{"a"}}, metricsText), nil
	}
	rs := Run(context.Background(), env)
	if Failed(rs) {
		t.Errorf("healthy node failed: %+v", rs)
	}
	want(t, "node", find(rs, "node")[0], OK, "running")
	if len(find(rs, "gossip shards")) != 1 {
		t.Errorf("no gossip line per topic: %+v", rs)
	}
}

func TestPrintOneLinePerResult(t *testing.T) {
	var out bytes.Buffer
	rs := []Result{ok("home", "/h"), fail("identity key", "mode 0644", "chmod 600 /h/identity.key")}
	if err := Print(&out, rs); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "OK ") || !strings.HasPrefix(lines[1], "FAIL ") ||
		!strings.HasSuffix(lines[1], "mode 0644 -> chmod 600 /h/identity.key") {
		t.Errorf("printed:\n%s", out.String())
	}
}
