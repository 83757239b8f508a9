package incentives_test

import (
	"bufio"
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Golden scenario files, in the spirit of etcd raft's interaction tests: each file under
// testdata/ is a list of blocks
//
//	# comments
//	command pos1 key=value ...
//	body line
//	----
//	expected output
//
// separated by blank lines. Run with -rewrite to regenerate the expected output.

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of golden scenario files")

type block struct {
	comments []string
	raw      string
	cmd      string
	pos      []string
	args     map[string]string
	body     []string
	want     string
	line     int
}

func parseScript(t *testing.T, path string) []*block {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var blocks []*block
	var cur *block
	var comments []string
	inOut := false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && (line == "" || strings.HasPrefix(line, "#")):
			if strings.HasPrefix(line, "#") {
				comments = append(comments, line)
			}
		case cur == nil:
			cur = &block{comments: comments, line: n, raw: line}
			comments = nil
			fields := strings.Fields(line)
			cur.cmd = fields[0]
			cur.pos, cur.args = splitArgs(fields[1:])
		case !inOut && line == "----":
			inOut = true
		case !inOut:
			cur.body = append(cur.body, line)
		case line == "":
			blocks, cur, inOut = append(blocks, cur), nil, false
		default:
			cur.want += line + "\n"
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cur != nil {
		if !inOut {
			t.Fatalf("%s:%d: block without ----", path, cur.line)
		}
		blocks = append(blocks, cur)
	}
	return blocks
}

func splitArgs(fields []string) ([]string, map[string]string) {
	args := map[string]string{}
	var pos []string
	for _, f := range fields {
		if k, v, ok := strings.Cut(f, "="); ok {
			args[k] = v
		} else {
			pos = append(pos, f)
		}
	}
	return pos, args
}

// runScript runs every block through run and compares (or, with -rewrite, replaces) the output.
func runScript(t *testing.T, path string, run func(b *block) string) {
	blocks := parseScript(t, path)
	var out bytes.Buffer
	for i, b := range blocks {
		got := run(b)
		if got != "" && !strings.HasSuffix(got, "\n") {
			got += "\n"
		}
		got = strings.ReplaceAll(got, "\n\n", "\n")
		if !*rewrite && got != b.want {
			t.Errorf("%s:%d: %s\n--- got\n%s--- want\n%s", path, b.line, b.cmd, got, b.want)
		}
		if i > 0 {
			out.WriteString("\n")
		}
		for _, c := range b.comments {
			out.WriteString(c + "\n")
		}
		out.WriteString(b.raw + "\n")
		for _, l := range b.body {
			out.WriteString(l + "\n")
		}
		out.WriteString("----\n" + got)
	}
	if *rewrite {
		if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func scriptFiles(t *testing.T) []string {
	files, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenario files: %v", err)
	}
	return files
}
