package htmltest_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"

	"github.com/stsdiag/stsdiag/e2e/internal/htmltest"
)

// golden holds the pages internal/render's TestHTMLGolden keeps equal to what check -o html and
// explain -o html print for a testdata/stuck scenario (through the diagnosis, as check computes it).
var golden = filepath.Join("..", "..", "..", "testdata", "golden", "html")

// TestHTMLInBrowser renders check -o html of a stuck rollout (testdata/stuck/stale-revision-stuck-mid-rollout)
// and explain -o html in headless Chromium, asserts on the DOM after the page's script ran, clicks
// a copy button, and keeps a screenshot in e2e/_artifacts/report.png.
func TestHTMLInBrowser(t *testing.T) {
	ctx := htmltest.Browser(t, 30*time.Second)
	checkFile := filepath.Join(golden, "check-stale-revision-stuck-mid-rollout.html")
	explainFile := filepath.Join(golden, "explain-create-failed-podsecurity.html")

	start := time.Now()
	// web-2, on neither revision, crash-loops and holds web-0 and web-1 (current revision).
	got := htmltest.Open(t, ctx, checkFile)
	want := htmltest.DOM{Sets: 1, Status: "Stuck", Ordinals: 3, Holds: 1, HoldsOrdinal: "2", Current: 2, Update: 0, Other: 1, Missing: 0,
		Errors: 1, Commands: 2, Buttons: 2, CopyButtons: "2", Border: "rgb(207, 34, 46)", Resources: 0}
	if got != want {
		t.Fatalf("check page DOM:\n got %+v\nwant %+v", got, want)
	}
	htmltest.Screenshot(t, ctx, filepath.Join("..", "..", "_artifacts", "report.png"))

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
	got = htmltest.Open(t, ctx, explainFile)
	want = htmltest.DOM{Sets: 1, Status: "Stuck", Ordinals: 2, Holds: 1, HoldsOrdinal: "0", Missing: 2, Errors: 1, Commands: 1, Buttons: 1, CopyButtons: "1",
		Border: "rgb(207, 34, 46)"}
	if got != want {
		t.Errorf("explain page DOM:\n got %+v\nwant %+v", got, want)
	}
	t.Logf("two pages rendered and checked in Chromium in %s; screenshot in e2e/_artifacts/report.png", time.Since(start).Round(time.Millisecond))
}
