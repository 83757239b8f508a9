// Package version says which build of lowband this is: a release tag stamped at build time,
// else what the go command recorded in the binary (module version, or VCS revision and
// time), else "dev". It imports nothing of lowband's, so every package may use it.
//
// A release is stamped with:
//
//	go build -ldflags "-X github.com/lowband/lowband/version.Tag=v0.1.0" ./cmd/lowband
package version

import (
	"runtime/debug"
	"strings"
	"time"
)

// Tag is the release tag, set at build time with -ldflags "-X ...version.Tag=...". Empty
// means the version comes from the build information.
var Tag string

// String is this build's version: Tag if set; else the main module's version when the
// go command recorded one (go install ...@v0.1.0, or the pseudo-version it derives from
// the VCS, with "+dirty" for uncommitted changes); else "devel-<time>-<revision>" from
// the recorded VCS settings, "+dirty" if modified; else "dev".
func String() string {
	bi, _ := debug.ReadBuildInfo()
	return resolve(Tag, bi)
}

// Agent is the agent version sent in libp2p's identify: "lowband/" + String().
func Agent() string { return "lowband/" + String() }

func resolve(tag string, bi *debug.BuildInfo) string {
	if tag != "" {
		return tag
	}
	if bi == nil {
		return "dev"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, at string
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "dev"
	}
	parts := []string{"devel"}
	if t, err := time.Parse(time.RFC3339, at); err == nil {
		parts = append(parts, t.UTC().Format("20060102150405"))
	}
	parts = append(parts, rev[:min(12, len(rev))])
	v := strings.Join(parts, "-")
	if dirty {
		v += "+dirty"
	}
	return v
}
