package render_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
)

// chromium finds the browser `make browser` installs (Debian's chromium package); STSDIAG_CHROMIUM
// names another.
func chromium(t *testing.T) string {
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

// TestHTMLInBrowser renders check -o html of a stuck rollout (testdata/stuck/stale-revision-stuck-mid-rollout
// through the diagnosis, as check computes it) and explain -o html in headless Chromium, asserts on
// the DOM after the page's script ran, clicks a copy button, and keeps a screenshot in
// e2e/_artifacts/report.png.
func TestHTMLInBrowser(t *testing.T) {
	exe := chromium(t)
	dir := t.TempDir()
	checkFile := filepath.Join(dir, "check.html")
	explainFile := filepath.Join(dir, "explain.html")
	if err := os.WriteFile(checkFile, checkPage(t, "stale-revision-stuck-mid-rollout"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(explainFile, explainPage(t, "create-failed-podsecurity", "web"), 0o644); err != nil {
		t.Fatal(err)
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox,
		chromedp.UserDataDir(filepath.Join(dir, "profile")), chromedp.WindowSize(1200, 800))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(allocCtx)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 30*time.Second)
	defer cancelTimeout()

	start := time.Now()
	// Everything asserted is read from the DOM after the page's script ran.
	const probe = `(() => {
		const n = (s) => document.querySelectorAll(s).length;
		const holds = document.querySelector("li.ordinal.holds");
		return {
			sets: n("section.set"), status: document.querySelector("section.set").dataset.status,
			ordinals: n("li.ordinal"), holds: n("li.ordinal.holds"), holdsOrdinal: holds ? holds.dataset.ordinal : "",
			current: n("li.ordinal.rev-current"), update: n("li.ordinal.rev-update"), other: n("li.ordinal.rev-other"), missing: n("li.ordinal.state-missing.rev-none"),
			errors: n("li.finding.severity-error"), commands: n("code.cmd"), buttons: n("button.copy"),
			copyButtons: document.body.dataset.copyButtons || "",
			border: holds ? getComputedStyle(holds).borderTopColor : "",
			resources: performance.getEntriesByType("resource").length,
		};
	})()`
	type dom struct {
		Sets                                              int
		Status                                            string
		Ordinals, Holds                                   int
		HoldsOrdinal                                      string
		Current, Update, Other, Missing, Errors, Commands int
		Buttons                                           int
		CopyButtons, Border                               string
		Resources                                         int
	}
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+checkFile), chromedp.WaitReady(chromedp.CSS("body[data-copy-buttons]"))); err != nil {
		t.Fatal(err)
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[dom](probe))
	if err != nil {
		t.Fatal(err)
	}
	want := dom{Sets: 1, Status: "Stuck", Ordinals: 3, Holds: 1, HoldsOrdinal: "2", Current: 2, Update: 0, Other: 1, Missing: 0,
		Errors: 1, Commands: 2, Buttons: 2, CopyButtons: "2",
		// the blocking ordinal's border: the inline CSS applied
		Border: "rgb(207, 34, 46)",
		// self-contained: nothing loaded (the page's Content-Security-Policy forbids it)
		Resources: 0}
	if got != want {
		t.Fatalf("check page DOM:\n got %+v\nwant %+v", got, want)
	}
	screenshot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	artifacts := filepath.Join("..", "..", "e2e", "_artifacts")
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(artifacts, "report.png"), screenshot, 0o644); err != nil {
		t.Fatal(err)
	}

	// The remedy's copy button puts the command on the clipboard.
	for _, name := range []string{"clipboard-read", "clipboard-write"} {
		if _, err := chromedp.CallBrowser(ctx, browser.SetPermission, browser.SetPermissionParams{
			Permission: &browser.PermissionDescriptor{Name: name}, Setting: browser.PermissionSettingGranted}); err != nil {
			t.Fatalf("granting %s: %v", name, err)
		}
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(".remedy button.copy"))); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector(".remedy button.copy").textContent === "Copied"`,
		chromedp.WithPollingTimeout(5*time.Second))); err != nil {
		t.Errorf("the copy button never said Copied: %v", err)
	}
	clipboard, err := chromedp.Run(ctx, chromedp.Evaluate[string](`navigator.clipboard.readText()`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("reading the clipboard: %v", err)
	}
	if clipboard != "kubectl delete pod web-2 -n shop" {
		t.Errorf("clipboard after clicking the remedy's copy button: %q, want %q", clipboard, "kubectl delete pod web-2 -n shop")
	}

	// explain -o html: web-0 cannot be created (PodSecurity) and holds web-1, which is not reached.
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+explainFile), chromedp.WaitReady(chromedp.CSS("body[data-copy-buttons]"))); err != nil {
		t.Fatal(err)
	}
	if got, err = chromedp.Run(ctx, chromedp.Evaluate[dom](probe)); err != nil {
		t.Fatal(err)
	}
	want = dom{Sets: 1, Status: "Stuck", Ordinals: 2, Holds: 1, HoldsOrdinal: "0", Missing: 2, Errors: 1, Commands: 1, Buttons: 1, CopyButtons: "1",
		Border: "rgb(207, 34, 46)"}
	if got != want {
		t.Errorf("explain page DOM:\n got %+v\nwant %+v", got, want)
	}
	t.Logf("Chromium %s: two pages rendered and checked in %s; screenshot in e2e/_artifacts/report.png", exe, time.Since(start).Round(time.Millisecond))
}
