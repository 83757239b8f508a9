package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestServiceUnitsVerify checks contrib/systemd's units with systemd-analyze (when the
// machine has it) and that their ExecStart is a command line this binary accepts.
func TestServiceUnitsVerify(t *testing.T) {
	units, _ := filepath.Glob("../../contrib/systemd/*.service")
	if len(units) != 2 {
		t.Fatalf("want the node and bootstrap units, found %v", units)
	}
	for _, u := range units {
		data, err := os.ReadFile(u)
		if err != nil {
			t.Fatal(err)
		}
		var args []string
		for _, line := range strings.Split(string(data), "\n") {
			if cmd, ok := strings.CutPrefix(line, "ExecStart=/usr/local/bin/lowband "); ok {
				args = strings.Fields(cmd)
			}
		}
		if len(args) == 0 || args[0] != "run" {
			t.Errorf("%s: no ExecStart running lowband run", u)
			continue
		}
		// The flags must parse: a missing home then fails cleanly, never "flag provided but not defined".
		missing := filepath.Join(t.TempDir(), "nothing")
		_, stderr, _ := lb(t, append(args, "--home", missing)...)
		if !strings.Contains(stderr, "lowband init --home") {
			t.Errorf("%s: lowband %v: %s", u, args, stderr)
		}
		if _, err := exec.LookPath("systemd-analyze"); err != nil {
			continue
		}
		// systemd-analyze wants the binary to exist: point the unit at this test's build.
		local := filepath.Join(t.TempDir(), filepath.Base(u))
		os.WriteFile(local, []byte(strings.ReplaceAll(string(data), "/usr/local/bin/lowband", lowbandBin)), 0o644)
		out, err := exec.Command("systemd-analyze", "verify", local).CombinedOutput()
		if err != nil || len(strings.TrimSpace(string(out))) > 0 {
			t.Errorf("systemd-analyze verify %s: %v\n%s", u, err, out)
		}
	}
}
