package node

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lowband/lowband/p2p/p2ptest"
)

// grafanaDashboard is the dashboard operators import, as the README names it.
const grafanaDashboard = "../docs/grafana/lowband.json"

// dashboard is what the test reads of a Grafana dashboard.
type dashboard struct {
	SchemaVersion int `json:"schemaVersion"`
	Templating    struct {
		List []struct {
			Name       string `json:"name"`
			Type       string `json:"type"`
			Definition string `json:"definition"` // a query variable's PromQL
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		Title      string `json:"title"`
		Type       string `json:"type"`
		Datasource struct {
			UID string `json:"uid"`
		} `json:"datasource"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

// metricName matches the metric names in a PromQL expression.
var metricName = regexp.MustCompile(`\b(?:lowband|go|process)_[a-z0-9_]+`)

// TestGrafanaDashboardMetricsExist reads the Grafana dashboard under docs/ (it must be a
// dashboard with a Prometheus data source variable, an instance variable and panels that
// query through it) and checks that every metric its queries name is served on /metrics
// by a training node of a small swarm once it has closed two rounds.
func TestGrafanaDashboardMetricsExist(t *testing.T) {
	want := dashboardMetrics(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	swarm := startSwarm(t, ctx, 2)
	if err := p2ptest.Poll(ctx, "two closed rounds", 50*time.Millisecond, func() bool {
		return len(swarm[0].trainingStatus().Rounds) >= 2
	}); err != nil {
		t.Fatal(err)
	}
	var missing []string
	if err := p2ptest.Poll(ctx, "every metric of the dashboard", 100*time.Millisecond, func() bool {
		served := metricFamilies(get(t, "http://"+swarm[0].APIAddr()+"/metrics"))
		missing = slices.DeleteFunc(slices.Clone(want), served.has)
		return len(missing) == 0
	}); err != nil {
		for _, m := range missing {
			t.Errorf("the dashboard queries %s, which a running node does not serve", m)
		}
		t.Fatal(err)
	}
}

// dashboardMetrics parses the dashboard, checks its shape and returns the metric names
// its panels' and variables' queries use, sorted.
func dashboardMetrics(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(grafanaDashboard)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", grafanaDashboard, err)
	}
	vars := map[string]string{}
	var names []string
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
		names = append(names, metricName.FindAllString(v.Definition, -1)...)
	}
	if d.SchemaVersion < 39 || vars["DS_PROMETHEUS"] != "datasource" || vars["instance"] != "query" {
		t.Fatalf("dashboard schema %d, variables %v: want schema 39 or later, a DS_PROMETHEUS data source and an instance query", d.SchemaVersion, vars)
	}
	graphs := 0
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		graphs++
		if len(p.Targets) == 0 || p.Datasource.UID != "${DS_PROMETHEUS}" {
			t.Errorf("panel %q: %d queries, data source %q", p.Title, len(p.Targets), p.Datasource.UID)
		}
		for _, q := range p.Targets {
			found := metricName.FindAllString(q.Expr, -1)
			if len(found) == 0 || !strings.Contains(q.Expr, `instance=~"$instance"`) {
				t.Errorf("panel %q: query %q names no metric or is not filtered by instance", p.Title, q.Expr)
			}
			names = append(names, found...)
		}
	}
	if graphs < 10 {
		t.Errorf("the dashboard has %d panels", graphs)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// families are the metric families of a Prometheus text exposition, by name, with their type.
type families map[string]string

func metricFamilies(text []byte) families {
	f := families{}
	sc := bufio.NewScanner(bytes.NewReader(text))
	for sc.Scan() {
		if fs := strings.Fields(sc.Text()); len(fs) == 4 && fs[0] == "#" && fs[1] == "TYPE" {
			f[fs[2]] = fs[3]
		}
	}
	return f
}

// has says whether name is a served family, or a series of a served histogram or summary.
func (f families) has(name string) bool {
	if _, ok := f[name]; ok {
		return true
	}
	for _, s := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, s); ok && (f[base] == "histogram" || f[base] == "summary") {
			return true
		}
	}
	return false
}
