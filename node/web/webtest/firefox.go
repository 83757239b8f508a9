package webtest

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// firefoxes are the names a Firefox is installed under (Debian's package installs
// firefox-esr).
var firefoxes = []string{"firefox-esr", "firefox"}

// firefoxPrefs keep a test profile quiet: Marionette on a free port (Firefox writes it to
// MarionetteActivePort in the profile), no first-run pages, updates or reports.
const firefoxPrefs = `user_pref("marionette.port", 0);
user_pref("browser.shell.checkDefaultBrowser", false);
user_pref("browser.startup.homepage_override.mstone", "ignore");
user_pref("app.update.enabled", false);
user_pref("datareporting.policy.dataSubmissionEnabled", false);
user_pref("toolkit.telemetry.reportingpolicy.firstRun", false);
user_pref("network.captive-portal-service.enabled", false);
`

// Firefox is one headless Firefox driven over Marionette, its remote protocol: load a page,
// evaluate script in it, take a screenshot. For the test's goroutine only.
type Firefox struct {
	t    testing.TB
	conn net.Conn
	r    *bufio.Reader
	id   int
}

// NewFirefox starts a headless Firefox for the test and stops it when the test ends. It
// skips the test, saying why, when no Firefox is on PATH: that is the only reason to skip.
func NewFirefox(t testing.TB, ctx context.Context) *Firefox {
	t.Helper()
	exe := ""
	for _, name := range firefoxes {
		if p, err := exec.LookPath(name); err == nil {
			exe = p
			break
		}
	}
	if exe == "" {
		t.Skipf("no Firefox on PATH (looked for %s): install Debian's firefox-esr package (scripts/deps.sh does) to run the Firefox test", strings.Join(firefoxes, ", "))
	}
	profile := t.TempDir()
	if err := os.WriteFile(filepath.Join(profile, "user.js"), []byte(firefoxPrefs), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "--headless", "--marionette", "--no-remote", "--profile", profile, "about:blank")
	cmd.Env = append(os.Environ(), "MOZ_HEADLESS=1")
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", exe, err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	f := &Firefox{t: t}
	f.connect(ctx, profile)
	f.call("WebDriver:NewSession", map[string]any{"capabilities": map[string]any{}})
	t.Cleanup(func() { f.conn.Close() })
	return f
}

// connect waits for Marionette's port in the profile and reads its greeting.
func (f *Firefox) connect(ctx context.Context, profile string) {
	f.t.Helper()
	for {
		if b, err := os.ReadFile(filepath.Join(profile, "MarionetteActivePort")); err == nil && len(strings.TrimSpace(string(b))) > 0 {
			conn, err := net.Dial("tcp", "127.0.0.1:"+strings.TrimSpace(string(b)))
			if err == nil {
				f.conn, f.r = conn, bufio.NewReader(conn)
				var hello struct {
					Protocol int `json:"marionetteProtocol"`
				}
				if err := json.Unmarshal(f.read(), &hello); err != nil || hello.Protocol < 3 {
					f.t.Fatalf("Marionette greeting: protocol %d, %v", hello.Protocol, err)
				}
				return
			}
		}
		select {
		case <-ctx.Done():
			f.t.Fatalf("waiting for Firefox's Marionette port: %v", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// read reads one Marionette message: its length in decimal, a colon, then JSON.
func (f *Firefox) read() []byte {
	f.t.Helper()
	_ = f.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	n, err := f.r.ReadString(':')
	if err != nil {
		f.t.Fatalf("reading from Marionette: %v", err)
	}
	size, err := strconv.Atoi(strings.TrimSuffix(n, ":"))
	if err != nil || size < 0 || size > 64<<20 {
		f.t.Fatalf("Marionette message of length %q", n)
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(f.r, b); err != nil {
		f.t.Fatalf("reading from Marionette: %v", err)
	}
	return b
}

// call sends a command and returns its result, failing the test on an error.
func (f *Firefox) call(name string, params any) json.RawMessage {
	f.t.Helper()
	f.id++
	msg, err := json.Marshal([]any{0, f.id, name, params})
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := fmt.Fprintf(f.conn, "%d:%s", len(msg), msg); err != nil {
		f.t.Fatalf("%s: %v", name, err)
	}
	var resp []json.RawMessage
	if err := json.Unmarshal(f.read(), &resp); err != nil || len(resp) != 4 {
		f.t.Fatalf("%s: reply of %d parts: %v", name, len(resp), err)
	}
	if e := string(resp[2]); e != "null" {
		f.t.Fatalf("%s: %s", name, e)
	}
	return resp[3]
}

// Open loads url and waits for the page to load.
func (f *Firefox) Open(url string) {
	f.t.Helper()
	f.call("WebDriver:Navigate", map[string]any{"url": url})
}

// FirefoxEval evaluates a JavaScript expression in the page and decodes its value (JSON).
func FirefoxEval[T any](f *Firefox, expr string) T {
	f.t.Helper()
	res := f.call("WebDriver:ExecuteScript", map[string]any{"script": "return (" + expr + ");", "args": []any{}})
	var v struct{ Value T }
	if err := json.Unmarshal(res, &v); err != nil {
		f.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v.Value
}

// WaitFor evaluates the boolean JavaScript expression every 100 ms until it is true,
// failing the test with what after timeout.
func (f *Firefox) WaitFor(what, expr string, timeout time.Duration) {
	f.t.Helper()
	end := time.Now().Add(timeout)
	for !FirefoxEval[bool](f, "!!("+expr+")") {
		if time.Now().After(end) {
			f.t.Fatalf("waiting %v for %s; the page shows:\n%s", timeout, what, FirefoxEval[string](f, "document.body.innerText"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Screenshot saves a PNG of the page named name where Browser.Screenshot saves its, and
// logs where.
func (f *Firefox) Screenshot(name string) string {
	f.t.Helper()
	var v struct{ Value string }
	if err := json.Unmarshal(f.call("WebDriver:TakeScreenshot", map[string]any{"full": true}), &v); err != nil {
		f.t.Fatal(err)
	}
	png, err := base64.StdEncoding.DecodeString(v.Value)
	if err != nil {
		f.t.Fatalf("screenshot: %v", err)
	}
	return save(f.t, name, png)
}
