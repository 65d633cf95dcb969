package render_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/render"
	"github.com/stsdiag/stsdiag/stuck"
)

// preflightResult is an answer with one clear StatefulSet and one whose rollout would not finish.
func preflightResult() *model.Preflight {
	return &model.Preflight{
		StatefulSets: []apiv1.PreflightStatefulSet{
			{Namespace: "shop", Name: "web", Source: "deploy/web.yaml", Change: apiv1.ChangeRollout, Replicas: 2, UpdateRevision: "web-5d4f8",
				Pods:   []apiv1.PreflightPod{{Name: "web-1", Ordinal: 1, Action: apiv1.PodReplace, Revision: "web-5d4f8"}},
				Images: []apiv1.PreflightImage{}, Status: apiv1.PreflightClear, Message: "replaces web-1 with revision web-5d4f8"},
			{Namespace: "shop", Name: "db", Source: "deploy/db.yaml", Change: apiv1.ChangeCreate, Replicas: 3, UpdateRevision: "db-7c9b",
				Pods: []apiv1.PreflightPod{}, Images: []apiv1.PreflightImage{}, Status: apiv1.PreflightWouldNotFinish,
				Message: "PodCreateFailed db-2: cannot create db-2: ResourceQuota pods exceeded (short by pods: 1)"},
		},
		Findings: []stuck.Finding{
			{Finding: apiv1.Finding{Code: apiv1.PodCreateFailed, Severity: apiv1.SeverityError, Reason: "QuotaExceeded", Namespace: "shop", StatefulSet: "db", Pod: "db-2",
				Message: "the controller cannot create pod db-2: the API server refuses it (QuotaExceeded)", Remedy: "kubectl edit resourcequota pods -n shop"},
				Short: "cannot create db-2: ResourceQuota pods exceeded (short by pods: 1)"},
			{Finding: apiv1.Finding{Code: apiv1.ImageUnverified, Severity: apiv1.SeverityWarning, Reason: "Unreachable", Namespace: "shop", StatefulSet: "web", Pod: "web-1",
				Message: "image quay.io/x:1 was not verified", Remedy: "--skip-images skips the registry checks"}, Short: "image quay.io/x:1 not verified"},
		},
		Warnings: []string{"listing limitranges in namespace shop: forbidden"},
	}
}

// TestPreflightGolden renders preflight's answer as a table, JSON and JUnit, compared with
// testdata/golden/preflight (-update to accept a change).
func TestPreflightGolden(t *testing.T) {
	for _, format := range []string{"table", "json", "junit"} {
		t.Run(format, func(t *testing.T) {
			var buf bytes.Buffer
			flags := render.NewPrintFlags(render.FormatJUnit)
			flags.OutputFormat = format
			if err := render.Preflight(&buf, preflightResult(), flags, false, 1500*time.Millisecond); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("..", "..", "testdata", "golden", "preflight", "preflight."+format)
			if *update {
				if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./internal/render -update)", err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				t.Errorf("%s differs:\n--- got\n%s\n--- want\n%s", golden, buf.String(), want)
			}
		})
	}
}

// TestPreflightGitHub: under GitHub Actions, one annotation per error and warning, and a section
// of the step summary with the verdict.
func TestPreflightGitHub(t *testing.T) {
	summary := filepath.Join(t.TempDir(), "summary.md")
	var out bytes.Buffer
	g := render.GitHubActions{Enabled: true, SummaryPath: summary}
	if err := g.Preflight(&out, preflightResult()); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "::error title=PodCreateFailed::shop/db/db-2: ") || !strings.HasPrefix(lines[1], "::warning title=ImageUnverified::shop/web/web-1: ") {
		t.Errorf("annotations %q", lines)
	}
	md, _ := os.ReadFile(summary)
	if !strings.HasPrefix(string(md), "### stsdiag preflight\n\nWould not finish: the rollouts of 1 of 2 StatefulSets would not finish by themselves.\n") {
		t.Errorf("summary %q", md)
	}
}
