package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// auditJSON is the shape `lowband audit --json` prints.
type auditJSON struct {
	Network, Run, Start string
	StartRoot           string `json:"start_root"`
	Head                uint64
	OK                  bool
	Rounds              []struct {
		Round        uint64
		Root         string
		Contributors []string
		Evidence     int
		Slashed      []string
		Checked      string
		Signature    string
		Checkpoint   bool
	}
	Failed *struct {
		Round  uint64
		Reason string
	}
}

func auditOut(t *testing.T, args ...string) (auditJSON, string, int) {
	t.Helper()
	out, stderr, code := lb(t, append([]string{"audit", "--json"}, args...)...)
	var rep auditJSON
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("audit %v: exit %d, %v: %s %s", args, code, err, out, stderr)
	}
	return rep, out, code
}

// flipFile flips a byte in the middle of a file.
func flipFile(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0x55
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestAuditBinaryPassesARunAndExitsOneNamingTheRound: the home of a node of a process
// testnet audits with exit 0 (one JSON object: every round checked, signed, some from
// their shards), its export too; the export with one byte of one record, or of one
// checkpoint chunk, changed exits 1 naming that round.
func TestAuditBinaryPassesARunAndExitsOneNamingTheRound(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a process testnet")
	}
	homes := quickNet(t, 2)
	cmds := startNet(t, homes)
	waitFor(t, 90*time.Second, "five closed rounds", func() bool { return len(loggedRoots(t, homes[1])) >= 5 })
	for _, c := range cmds {
		stopNode(t, c)
	}
	out := filepath.Join(t.TempDir(), "export")
	rep, _, code := auditOut(t, "--home", homes[1], "--export", out)
	if code != 0 || !rep.OK || rep.Start != "genesis" || len(rep.Rounds) < 5 || uint64(len(rep.Rounds)) != rep.Head {
		t.Fatalf("audit of a home: exit %d, %+v", code, rep)
	}
	full := 0
	for _, l := range rep.Rounds {
		if l.Signature != "ok" || len(l.Root) != 64 || len(l.Contributors) == 0 {
			log, _ := os.ReadFile(filepath.Join(homes[1], "node.log"))
			t.Fatalf("round %d: %+v\n%s", l.Round, l, log)
		}
		if l.Checked == "full" {
			full++
		}
	}
	if full == 0 {
		t.Fatal("no round closed again from its shards")
	}
	text, _, code := lb(t, "audit", "--home", homes[1])
	if code != 0 || !strings.Contains(text, "ok: ") {
		t.Fatalf("text audit: exit %d: %s", code, text)
	}
	spec := filepath.Join(homes[1], "network.toml")
	records, ckpts := filepath.Join(out, "records"), filepath.Join(out, "checkpoints")
	if rep, _, code := auditOut(t, "--records", records, "--checkpoints", ckpts, "--spec", spec); code != 0 || !rep.OK {
		t.Fatalf("audit of the export: exit %d, %+v", code, rep)
	}
	ckptRound := firstCheckpoint(t, rep)
	flipFile(t, chunkOf(t, ckpts, ckptRound))
	rep, _, code = auditOut(t, "--records", records, "--checkpoints", ckpts, "--spec", spec)
	if code != 1 || rep.OK || rep.Failed == nil || rep.Failed.Round != ckptRound || !strings.Contains(rep.Failed.Reason, "checkpoint") {
		t.Fatalf("a chunk of checkpoint %d changed: exit %d, failed %+v", ckptRound, code, rep.Failed)
	}
	t.Logf("a checkpoint chunk changed: %+v", *rep.Failed)
	flipFile(t, filepath.Join(records, "round-00000000000000000001.rec"))
	rep, _, code = auditOut(t, "--records", records, "--spec", spec)
	if code != 1 || rep.OK || rep.Failed == nil || rep.Failed.Round != 1 {
		t.Fatalf("a record changed: exit %d, failed %+v", code, rep.Failed)
	}
	t.Logf("a record changed: %+v", *rep.Failed)
}

// firstCheckpoint is the round of the first checkpoint an audit checked.
func firstCheckpoint(t *testing.T, rep auditJSON) uint64 {
	t.Helper()
	for _, l := range rep.Rounds {
		if l.Checkpoint {
			return l.Round + 1
		}
	}
	t.Fatal("no checkpoint checked")
	return 0
}

// chunkOf is the path of an exported chunk that the manifest of round r lists.
func chunkOf(t *testing.T, dir string, r uint64) string {
	t.Helper()
	manifest, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("round-%020d.manifest", r)))
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(filepath.Join(dir, "chunks"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if h, err := hex.DecodeString(e.Name()); err == nil && bytes.Contains(manifest, h) {
			return filepath.Join(dir, "chunks", e.Name())
		}
	}
	t.Fatalf("no chunk of checkpoint %d exported", r)
	return ""
}
