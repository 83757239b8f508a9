package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestPprofServesOnLoopbackOnly: --pprof serves the heap profile on a loopback address and
// refuses any other.
func TestPprofServesOnLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:0", "nonsense"} {
		if _, _, err := startPprof(addr); err == nil {
			t.Errorf("--pprof %s: served", addr)
		}
	}
	addr, stop, err := startPprof("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	resp, err := http.Get("http://" + addr + "/debug/pprof/heap?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "HeapInuse") {
		t.Fatalf("heap profile: %s %.200s", resp.Status, body)
	}
}
