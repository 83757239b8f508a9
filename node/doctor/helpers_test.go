package doctor

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/lowband/lowband/configs"
)

// newHome initialises a local-profile home in a temporary directory.
func newHome(t *testing.T) configs.Home {
	t.Helper()
	h := configs.Home{Dir: filepath.Join(t.TempDir(), "home")}
	if err := h.Init(configs.InitOptions{Profile: configs.ProfileLocal}); err != nil {
		t.Fatal(err)
	}
	return h
}

// loaded returns the home's config and spec.
func loaded(t *testing.T, h configs.Home) (*configs.Config, *configs.Spec) {
	t.Helper()
	c, s, err := h.Load()
	if err != nil {
		t.Fatal(err)
	}
	return c, s
}

// want asserts a result's level and that its detail and fix contain each of the words.
func want(t *testing.T, what string, r Result, level Level, words ...string) {
	t.Helper()
	if r.Level != level {
		t.Errorf("%s: level %s, want %s: %+v", what, r.Level, level, r)
		return
	}
	text := r.Detail + " -> " + r.Fix
	for _, w := range words {
		if !strings.Contains(text, w) {
			t.Errorf("%s: %q lacks %q", what, text, w)
		}
	}
	if level >= Warn && r.Fix == "" {
		t.Errorf("%s: a %s says nothing about what to do: %+v", what, level, r)
	}
}
