// Package htmltest renders stsdiag's HTML pages (check -o html, explain -o html) in headless
// Chromium for tests, and reads their DOM after the page's script ran.
package htmltest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Chromium finds the browser `make browser` installs (Debian's chromium package); STSDIAG_CHROMIUM
// names another. Without one the test is skipped, saying why.
func Chromium(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("STSDIAG_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("skipped: no Chromium here (chromium, chromium-browser, google-chrome not in PATH, STSDIAG_CHROMIUM unset); " +
		"`make browser` installs Debian's chromium package (needs root and apt-get) so that this test renders the HTML report")
	return ""
}

// Browser starts headless Chromium (skipping the test without one) and returns its chromedp
// context, bounded by timeout; it stops with the test.
func Browser(t testing.TB, timeout time.Duration) context.Context {
	t.Helper()
	exe := Chromium(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox,
		chromedp.UserDataDir(filepath.Join(t.TempDir(), "profile")), chromedp.WindowSize(1200, 800))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	ctx, cancelTimeout := context.WithTimeout(ctx, timeout)
	t.Cleanup(func() { cancelTimeout(); cancel(); cancelAlloc() })
	return ctx
}

// DOM is what the tests assert on a rendered page, read from the DOM after its script ran.
type DOM struct {
	// Sets are the StatefulSet sections; Status the first one's data-status.
	Sets   int
	Status string
	// Ordinals are the ordinal boxes; Holds those marked as blocking, HoldsOrdinal the first one's
	// ordinal.
	Ordinals, Holds int
	HoldsOrdinal    string
	// Current, Update, Other: ordinals coloured by revision; Missing: no pod (state and revision).
	Current, Update, Other, Missing int
	// Errors are error findings; Commands the commands (remedies, explain); Buttons the copy
	// buttons the script added, CopyButtons the count it wrote on <body>.
	Errors, Commands, Buttons int
	CopyButtons               string
	// Border is the blocking ordinal's computed border colour (the inline CSS applied).
	Border string
	// Resources is how many resources the page loaded (none: it is self-contained).
	Resources int
}

const probe = `(() => {
	const n = (s) => document.querySelectorAll(s).length;
	const set = document.querySelector("section.set");
	const holds = document.querySelector("li.ordinal.holds");
	return {
		sets: n("section.set"), status: set ? set.dataset.status : "",
		ordinals: n("li.ordinal"), holds: n("li.ordinal.holds"), holdsOrdinal: holds ? holds.dataset.ordinal : "",
		current: n("li.ordinal.rev-current"), update: n("li.ordinal.rev-update"), other: n("li.ordinal.rev-other"),
		missing: n("li.ordinal.state-missing.rev-none"),
		errors: n("li.finding.severity-error"), commands: n("code.cmd"), buttons: n("button.copy"),
		copyButtons: document.body.dataset.copyButtons || "",
		border: holds ? getComputedStyle(holds).borderTopColor : "",
		resources: performance.getEntriesByType("resource").length,
	};
})()`

// Open loads the page file in the browser, waits for its script, and reads its DOM.
func Open(t testing.TB, ctx context.Context, file string) DOM {
	t.Helper()
	abs, err := filepath.Abs(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+abs), chromedp.WaitReady(chromedp.CSS("body[data-copy-buttons]"))); err != nil {
		t.Fatalf("rendering %s: %v", file, err)
	}
	dom, err := chromedp.Run(ctx, chromedp.Evaluate[DOM](probe))
	if err != nil {
		t.Fatalf("reading the DOM of %s: %v", file, err)
	}
	return dom
}

// Screenshot writes a PNG of the whole page now shown to path (its directory created).
func Screenshot(t testing.TB, ctx context.Context, path string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
}
