package render_test

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/stsdiag/stsdiag/internal/diagnose"
	"github.com/stsdiag/stsdiag/internal/render"
	"github.com/stsdiag/stsdiag/internal/snapshot"
	"github.com/stsdiag/stsdiag/internal/snapshot/snapshottest"
	"github.com/stsdiag/stsdiag/internal/stuck"
)

// checkPage renders check -o html for a testdata/stuck scenario through the diagnosis (the
// report and the explanations of one run, as check computes them).
func checkPage(t *testing.T, scenario string) []byte {
	t.Helper()
	snap, err := snapshot.LoadFile(filepath.Join("..", "..", "testdata", "stuck", scenario, "objects.yaml"), snapshottest.Now)
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
	snap, err := snapshot.LoadFile(filepath.Join("..", "..", "testdata", "stuck", scenario, "objects.yaml"), snapshottest.Now)
	if err != nil {
		t.Fatal(err)
	}
	e, err := diagnose.Explanation(snap, snap.StatefulSets[0].Namespace, name, stuck.DefaultOptions())
	if err != nil {
		t.Fatal(err)
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
