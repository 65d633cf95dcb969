package render_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/diagnose"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/render"
	"github.com/stsdiag/stsdiag/internal/snapshot/snapshottest"
	"github.com/stsdiag/stsdiag/stuck"
)

// checkPage renders check -o html for a testdata/stuck scenario through the diagnosis (the
// report and the explanations of one run, as check computes them).
func checkPage(t *testing.T, scenario string) []byte {
	t.Helper()
	snap, err := stuck.LoadFile(filepath.Join("..", "..", "testdata", "stuck", scenario, "objects.yaml"), snapshottest.Now)
	if err != nil {
		t.Fatal(err)
	}
	rep, explanations := diagnose.ReportWithExplanations(snap, stuck.DefaultOptions())
	flags := render.NewPrintFlags(render.FormatHTML)
	flags.OutputFormat = "html"
	if err := flags.Validate(); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := render.Report(&buf, rep, flags, render.TableOptions{Explanations: explanations, Now: snapshottest.Now}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func explainPage(t *testing.T, scenario, name string) []byte {
	t.Helper()
	snap, err := stuck.LoadFile(filepath.Join("..", "..", "testdata", "stuck", scenario, "objects.yaml"), snapshottest.Now)
	if err != nil {
		t.Fatal(err)
	}
	e := diagnose.Explanation(snap, snap.StatefulSets[0].Namespace, name, stuck.DefaultOptions())
	if e == nil {
		t.Fatalf("no StatefulSet %s", name)
	}
	flags := render.NewPrintFlags(render.FormatHTML)
	flags.OutputFormat = "html"
	var buf bytes.Buffer
	if err := render.Explanation(&buf, e, flags, snapshottest.Now); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestHTMLGolden compares check -o html and explain -o html pages with testdata/golden/html.
// Run with -update to accept a change.
func TestHTMLGolden(t *testing.T) {
	for _, scenario := range []string{"stale-revision-stuck-mid-rollout", "healthy-ordered-ready"} {
		t.Run("check/"+scenario, func(t *testing.T) {
			snapshottest.Golden(t, filepath.Join("html", "check-"+scenario+".html"), checkPage(t, scenario), *update)
		})
	}
	t.Run("explain/create-failed-podsecurity", func(t *testing.T) {
		snapshottest.Golden(t, filepath.Join("html", "explain-create-failed-podsecurity.html"), explainPage(t, "create-failed-podsecurity", "web"), *update)
	})
}

// TestHTMLEscapes: what the cluster says (a message, an image, a remedy, a name) is text on the
// page, never markup or script; and the page loads nothing from anywhere.
func TestHTMLEscapes(t *testing.T) {
	hostile := `<script>alert("x")</script><img src=x onerror=alert(1)>`
	f := stuck.Finding{Finding: apiv1.Finding{Code: apiv1.StaleRevisionStuck, Severity: apiv1.SeverityError, Namespace: "shop", StatefulSet: "web",
		Pod: "web-0", Container: "app", Image: "registry.example/app:1" + hostile, Message: "stuck " + hostile, Remedy: "kubectl delete pod web-0 -n shop " + hostile,
		Details: apiv1.FindingDetails{Logs: []string{"panic: " + hostile}}}}
	rep := model.NewReport(false, []apiv1.StatefulSetSummary{{Namespace: "shop", Name: "web", Replicas: 1, Status: apiv1.StatusStuck}}, []stuck.Finding{f})
	rep.Warnings = []string{hostile}
	e := &apiv1.Explanation{Namespace: "shop", StatefulSet: "web", Status: apiv1.StatusStuck, Replicas: 1, UpdateRevision: "web-1" + hostile,
		TemplateChanges: []string{"image: a → " + hostile},
		Ordinals:        []apiv1.OrdinalStep{{Ordinal: 0, Pod: "web-0", State: "Running", Revision: "web-0" + hostile, Next: apiv1.StepWaitReady, Holds: true, Why: hostile}},
		Findings:        []apiv1.Finding{f.Finding}}
	var check, explain bytes.Buffer
	if err := render.ReportHTML(&check, rep, map[string]*apiv1.Explanation{"shop/web": e}, snapshottest.Now); err != nil {
		t.Fatal(err)
	}
	if err := render.ExplanationHTML(&explain, e, snapshottest.Now); err != nil {
		t.Fatal(err)
	}
	for name, page := range map[string]string{"check": check.String(), "explain": explain.String()} {
		if n := strings.Count(page, "<script"); n != 1 {
			t.Errorf("%s page: %d <script elements, want 1 (its own)", name, n)
		}
		for _, bad := range []string{"<img", `alert("x")`, ` src="`, ` href="`, "<link", "url(", "@import", "http://", "https://"} {
			if strings.Contains(page, bad) {
				t.Errorf("%s page contains %q", name, bad)
			}
		}
		if !strings.Contains(page, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;") {
			t.Errorf("%s page does not show the hostile text escaped", name)
		}
	}
	if !strings.Contains(check.String(), "panic: &lt;script&gt;") {
		t.Errorf("check page lacks the finding's previous log, escaped")
	}
}

// TestHTMLSeveralClusters: a report of several clusters has no explanations: each set shows its
// counts and the explain command of its context, no ordinals.
func TestHTMLSeveralClusters(t *testing.T) {
	rep := model.NewReport(false, []apiv1.StatefulSetSummary{
		{Context: "east", Namespace: "shop", Name: "web", Replicas: 3, ReadyReplicas: 1, Status: apiv1.StatusStuck},
		{Context: "west", Namespace: "shop", Name: "web", Replicas: 3, ReadyReplicas: 3, Status: apiv1.StatusComplete},
	}, nil)
	var buf bytes.Buffer
	if err := render.ReportHTML(&buf, rep, nil, snapshottest.Now); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, want := range []string{"<h2>east: shop/web</h2>", "<h2>west: shop/web</h2>", "3 replicas, 1 ready", "3 replicas, 3 ready",
		"kubectl stsdiag explain web -n shop --context east", "kubectl stsdiag explain web -n shop --context west"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if n, m := strings.Count(page, `class="ordinal `), strings.Count(page, `class="muted no-ordinals"`); n != 0 || m != 2 {
		t.Errorf("%d ordinals and %d notes without ordinals, want 0 and 2", n, m)
	}
}
