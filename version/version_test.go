package version

import (
	"runtime/debug"
	"testing"
)

func info(main string, settings ...string) *debug.BuildInfo {
	bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/lowband/lowband", Version: main}}
	for i := 0; i+1 < len(settings); i += 2 {
		bi.Settings = append(bi.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
	}
	return bi
}

func TestVersionFromTagBuildInfoOrDev(t *testing.T) {
	const rev = "68174ec0123456789abcdef0123456789abcdef0"
	cases := []struct {
		name string
		tag  string
		bi   *debug.BuildInfo
		want string
	}{
		{"stamped tag wins", "v1.2.3", info("v0.0.0-20261123121518-68174ec01234"), "v1.2.3"},
		{"module version from go install", "", info("v0.4.0"), "v0.4.0"},
		{"pseudo-version the go command stamps", "", info("v0.0.0-20261123121518-68174ec01234+dirty"), "v0.0.0-20261123121518-68174ec01234+dirty"},
		{"vcs revision and time", "", info("(devel)", "vcs.revision", rev, "vcs.time", "2026-11-23T12:15:18Z", "vcs.modified", "false"),
			"devel-20261123121518-68174ec01234"},
		{"vcs revision, modified", "", info("(devel)", "vcs.revision", rev, "vcs.time", "2026-11-23T12:15:18Z", "vcs.modified", "true"),
			"devel-20261123121518-68174ec01234+dirty"},
		{"vcs revision without time", "", info("(devel)", "vcs.revision", rev), "devel-68174ec01234"},
		{"no vcs information", "", info("(devel)"), "dev"},
		{"no build information", "", nil, "dev"},
	}
	for _, c := range cases {
		if got := resolve(c.tag, c.bi); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

func TestAgentNamesLowbandAndTheVersion(t *testing.T) {
	if got, want := Agent(), "lowband/"+String(); got != want {
		t.Errorf("Agent() = %q, want %q", got, want)
	}
	if String() == "" {
		t.Error("String() is empty")
	}
}
