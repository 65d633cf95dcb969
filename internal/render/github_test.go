package render_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/render"
	"github.com/stsdiag/stsdiag/internal/snapshot/snapshottest"
	"github.com/stsdiag/stsdiag/stuck"
)

func githubReport() *model.Report {
	return model.NewReport(false,
		[]apiv1.StatefulSetSummary{{Namespace: "shop", Name: "web", Replicas: 3, Status: apiv1.StatusStuck}},
		[]stuck.Finding{
			stuckFinding,
			{Finding: apiv1.Finding{Code: apiv1.ImageLookupDisabled, Severity: apiv1.SeverityWarning, Namespace: "shop", StatefulSet: "web", Message: "stream app: lookupPolicy.local is off, \n100% sure", Remedy: "oc set image-lookup app -n shop"}},
			{Finding: apiv1.Finding{Code: apiv1.OnDeleteStale, Severity: apiv1.SeverityInfo, Namespace: "shop", StatefulSet: "db", Pod: "db-0", Message: "db-0 waits for a delete | by design"}},
		})
}

func TestGitHubFromEnv(t *testing.T) {
	env := map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": "/tmp/x"}
	if g := render.GitHubFromEnv(func(k string) string { return env[k] }); !g.Enabled || g.SummaryPath != "/tmp/x" {
		t.Errorf("%+v", g)
	}
	env["GITHUB_ACTIONS"] = "1"
	if g := render.GitHubFromEnv(func(k string) string { return env[k] }); g.Enabled {
		t.Errorf("only GITHUB_ACTIONS=true enables it: %+v", g)
	}
}

// TestGitHubAnnotations: one ::error per error finding, ::warning per warning, none for info;
// the data and the title are escaped as the runner expects.
func TestGitHubAnnotations(t *testing.T) {
	var buf bytes.Buffer
	if err := render.WriteAnnotations(&buf, githubReport().Findings); err != nil {
		t.Fatal(err)
	}
	want := "::error title=StaleRevisionStuck::shop/web/web-0: web-0 runs old revision web-a & is stuck <here> — kubectl delete pod web-0 -n shop\n" +
		"::warning title=ImageLookupDisabled::shop/web: stream app: lookupPolicy.local is off, 100%25 sure — oc set image-lookup app -n shop\n"
	if buf.String() != want {
		t.Errorf("got\n%s\nwant\n%s", buf.String(), want)
	}
	buf.Reset()
	_ = render.WriteAnnotations(&buf, []stuck.Finding{{Finding: apiv1.Finding{Code: "A:b,c", Severity: apiv1.SeverityError, Namespace: "n", StatefulSet: "s", Message: "m"}}})
	if got := buf.String(); got != "::error title=A%3Ab%2Cc::n/s: m\n" {
		t.Errorf("property escaping: %q", got)
	}
}

// TestGitHubStepSummary: check and wait append (never truncate) a Markdown section to the file.
func TestGitHubStepSummary(t *testing.T) {
	path := filepath.Join(t.TempDir(), "summary.md")
	if err := os.WriteFile(path, []byte("earlier step\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	g := render.GitHubActions{Enabled: true, SummaryPath: path}
	var stderr bytes.Buffer
	if err := g.Report(&stderr, githubReport()); err != nil {
		t.Fatal(err)
	}
	res := model.NewWaitResult(apiv1.WaitStuck, "1 finding(s) held for 30s")
	res.Elapsed = "31.5s"
	res.Findings = []stuck.Finding{stuckFinding}
	if err := g.WaitResult(&stderr, res); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(stderr.String(), "::error "); n != 2 {
		t.Errorf("%d ::error lines, want 2:\n%s", n, stderr.String())
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(got, []byte("earlier step\n")) {
		t.Errorf("the summary file was truncated:\n%s", got)
	}
	snapshottest.Golden(t, "github-step-summary.md", got, *update)

	off := render.GitHubActions{SummaryPath: path}
	stderr.Reset()
	if err := off.Report(&stderr, githubReport()); err != nil || stderr.Len() > 0 {
		t.Errorf("without GITHUB_ACTIONS=true nothing is written: %v %q", err, stderr.String())
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, got) {
		t.Error("without GITHUB_ACTIONS=true the summary changed")
	}
}
