package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lowband/lowband/version"
)

func TestVersionCommandPrintsTheBuildVersion(t *testing.T) {
	var out bytes.Buffer
	if code := runMain([]string{"lowband", "version"}, &out, &out); code != 0 {
		t.Fatalf("exit %d: %s", code, out.String())
	}
	if got, want := out.String(), "lowband "+version.String()+"\n"; got != want {
		t.Errorf("lowband version printed %q, want %q", got, want)
	}
}

func TestVersionStampedWithLdflags(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "lowband")
	const tag = "v9.8.7-stamped"
	build := exec.Command("go", "build", "-o", bin, "-ldflags", "-X github.com/lowband/lowband/version.Tag="+tag, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil || strings.TrimSpace(string(out)) != "lowband "+tag {
		t.Errorf("stamped binary: version printed %q (%v), want %q", out, err, "lowband "+tag)
	}
}
