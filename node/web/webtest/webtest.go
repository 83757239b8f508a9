// Package webtest drives a headless Chromium (chromedp) and a headless Firefox (Marionette)
// from tests, to check the dashboard as a person would see it: what the page shows, and, in
// Chromium, that it logs no error to the browser's console.
package webtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// binaries are the names a Chromium is installed under (Debian's package installs chromium).
var binaries = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// Browser is one headless Chromium tab. Its methods are for the test's goroutine, except
// Errors, which is safe for concurrent use.
type Browser struct {
	t   testing.TB
	ctx context.Context

	mu       sync.Mutex
	errs     []string // console errors and uncaught exceptions, in order
	offline  []string // network errors reported while the page's server was meant to be down
	tolerate bool     // network errors are expected (see ExpectServerDown)
}

// New starts a headless Chromium for the test and closes it when the test ends. It skips the
// test, saying why, when no Chromium binary is on PATH: that is the only reason to skip.
func New(t testing.TB, ctx context.Context) *Browser {
	t.Helper()
	exe := ""
	for _, name := range binaries {
		if p, err := exec.LookPath(name); err == nil {
			exe = p
			break
		}
	}
	if exe == "" {
		t.Skipf("no Chromium on PATH (looked for %s): install Debian's chromium package (scripts/deps.sh does) to run the browser test", strings.Join(binaries, ", "))
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox,
		chromedp.WindowSize(1440, 1000), chromedp.Flag("disable-gpu", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	bctx, cancelTab := chromedp.NewContext(actx)
	b := &Browser{t: t, ctx: bctx}
	t.Cleanup(func() { cancelTab(); cancelAlloc() })
	if err := chromedp.Listen(bctx, b.listen); err != nil { // starts the browser
		t.Fatalf("starting %s: %v", exe, err)
	}
	return b
}

func (b *Browser) listen(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
			var args []string
			for _, a := range ev.Args {
				args = append(args, string(a.Value)+a.Description)
			}
			b.errs = append(b.errs, "console."+string(ev.Type)+": "+strings.Join(args, " "))
		}
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		msg := d.Text
		if d.Exception != nil {
			msg += " " + d.Exception.Description
		}
		b.errs = append(b.errs, fmt.Sprintf("uncaught exception at %s:%d: %s", d.URL, d.LineNumber, msg))
	case *cdplog.EventEntryAdded:
		e := ev.Entry
		if e.Level != cdplog.EntryLevelError {
			return
		}
		line := fmt.Sprintf("%s error: %s %s", e.Source, e.Text, e.URL)
		if b.tolerate && e.Source == cdplog.EntrySourceNetwork {
			b.offline = append(b.offline, line)
			return
		}
		b.errs = append(b.errs, line)
	}
}

// ExpectServerDown says that from now on the page's server is stopped: the browser's own
// reports of refused connections are expected (a page cannot silence them) and are not
// counted as errors. Every other error still is.
func (b *Browser) ExpectServerDown() {
	b.mu.Lock()
	b.tolerate = true
	b.mu.Unlock()
}

// Errors returns the console errors and uncaught exceptions seen so far.
func (b *Browser) Errors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.errs...)
}

// Open loads url and waits for the page to load.
func (b *Browser) Open(url string) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, chromedp.Navigate(url)); err != nil {
		b.t.Fatalf("opening %s: %v", url, err)
	}
}

// Eval evaluates a JavaScript expression in the page and decodes its value (JSON) into out.
func Eval[T any](b *Browser, expr string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// WaitFor evaluates the boolean JavaScript expression every 100 ms until it is true, failing
// the test with what after timeout.
func (b *Browser) WaitFor(what, expr string, timeout time.Duration) {
	b.t.Helper()
	end := time.Now().Add(timeout)
	for {
		if Eval[bool](b, "!!("+expr+")") {
			return
		}
		if time.Now().After(end) {
			b.t.Fatalf("waiting %v for %s; the page shows:\n%s", timeout, what, Eval[string](b, "document.body.innerText"))
		}
		select {
		case <-b.ctx.Done():
			b.t.Fatalf("waiting for %s: %v", what, b.ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// WaitEqual evaluates the JavaScript expression expr, a string, every 100 ms until it equals
// what want returns for it, failing the test with both after timeout. want sees what the page
// shows, so that a source that moves on can answer with its state at the moment the page
// shows (a ledger at the page's round, say).
func (b *Browser) WaitEqual(what, expr string, want func(shown string) string, timeout time.Duration) {
	b.t.Helper()
	end := time.Now().Add(timeout)
	for {
		got := Eval[string](b, expr)
		w := want(got)
		if got == w {
			return
		}
		if time.Now().After(end) {
			b.t.Fatalf("waiting %v for %s: the page shows\n%s\nwant\n%s", timeout, what, got, w)
		}
		select {
		case <-b.ctx.Done():
			b.t.Fatalf("waiting for %s: %v", what, b.ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// CheckConsole fails the test if the page logged an error or threw.
func (b *Browser) CheckConsole() {
	b.t.Helper()
	for _, e := range b.Errors() {
		b.t.Errorf("browser console: %s", e)
	}
}

// Screenshot saves a full-page PNG (quality 100 is PNG) named name under $LOWBAND_TEST_ARTIFACTS if set, else the
// system's temporary directory (a test's own directory is deleted when it ends), and logs
// where.
func (b *Browser) Screenshot(name string) string {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot: %v", err)
	}
	return save(b.t, name, png)
}

// save writes png as name under $LOWBAND_TEST_ARTIFACTS if set, else the system's
// temporary directory, and logs where.
func save(t testing.TB, name string, png []byte) string {
	t.Helper()
	dir := os.Getenv("LOWBAND_TEST_ARTIFACTS")
	if dir == "" {
		dir = os.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
	return path
}
