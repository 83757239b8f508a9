package bench

import (
	"context"
	"testing"
	"time"
)

func TestParseSize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
		ok   bool
	}{
		{"1000", 1000, true}, {"512KiB", 512 << 10, true}, {"1MiB", 1 << 20, true}, {"1.5KiB", 1536, true},
		{"2kB", 2000, true}, {"3 MB", 3_000_000, true}, {"7B", 7, true},
		{"", 0, false}, {"-1", 0, false}, {"1.5", 0, false}, {"12QB", 0, false}, {"KiB", 0, false},
	} {
		got, err := ParseSize(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, ok %v", c.in, got, err, c.want, c.ok)
		}
	}
}

func TestQuantile(t *testing.T) {
	v := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, c := range []struct{ q, want float64 }{{0.5, 5}, {0.99, 10}, {0.1, 1}, {1, 10}, {0, 1}} {
		if got := quantile(v, c.q); got != c.want {
			t.Errorf("quantile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
}

func TestSmallP2PBenchmarks(t *testing.T) {
	ctx := context.Background()
	for _, transport := range []string{"tcp", "mem"} {
		d, err := RunDiscovery(ctx, 5, transport, 30*time.Second)
		if err != nil {
			t.Fatalf("%s: %v", transport, err)
		}
		if d.Nodes != 5 || d.Transport != transport || d.AllTablesNonemptyS <= 0 || d.FormedS < d.AllTablesNonemptyS ||
			d.ReachAllS <= 0 || d.MemPerHostBytes <= 0 {
			t.Errorf("discovery result %+v", d)
		}
	}
	g, err := RunGossip(ctx, GossipOptions{Nodes: 5, Size: 4 << 10, Messages: 3, Wait: 10 * time.Second, Timeout: 30 * time.Second, Transport: "tcp"})
	if err != nil {
		t.Fatal(err)
	}
	if g.DeliveredFraction != 1 || g.P50S <= 0 || g.P50S > g.P99S || g.P99S > g.MaxS || g.FormedS <= 0 {
		t.Errorf("gossip result %+v", g)
	}
	if _, err := RunGossip(ctx, GossipOptions{Nodes: 5, Size: 1 << 20, Messages: 1, Transport: "tcp"}); err == nil {
		t.Error("gossip over the cap: want an error")
	}
	if _, err := RunDiscovery(ctx, 5, "carrier-pigeon", time.Second); err == nil {
		t.Error("unknown transport: want an error")
	}
}
