package render_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/diagnose"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/render"
	"github.com/stsdiag/stsdiag/stuck"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// TestGolden renders reports of testdata scenarios in every format and compares them with
// testdata/golden. Run with -update to accept a change.
func TestGolden(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	for _, scenario := range []string{"stale-revision-stuck-3-replicas", "on-delete", "healthy-ordered-ready", "orphaned-revision"} {
		snap, err := stuck.LoadFile(filepath.Join("..", "..", "testdata", "stuck", scenario, "objects.yaml"), now)
		if err != nil {
			t.Fatal(err)
		}
		rep := diagnose.Report(snap, stuck.DefaultOptions())
		for _, format := range []string{"table", "wide", "json", "yaml", "name"} {
			t.Run(scenario+"."+format, func(t *testing.T) {
				var buf bytes.Buffer
				flags := render.NewPrintFlags(render.FormatName)
				flags.OutputFormat = format
				if err := flags.Validate(); err != nil {
					t.Fatal(err)
				}
				if err := render.Report(&buf, rep, flags, render.TableOptions{}); err != nil {
					t.Fatal(err)
				}
				golden := filepath.Join("..", "..", "testdata", "golden", scenario+"."+format)
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
					t.Errorf("%s differs from golden file:\n--- got\n%s\n--- want\n%s", golden, buf.String(), want)
				}
			})
		}
	}
}

func TestColorKeepsAlignment(t *testing.T) {
	rep := model.NewReport(false, nil, []stuck.Finding{
		{Finding: apiv1.Finding{Code: "A", Severity: apiv1.SeverityError, StatefulSet: "web", Message: "m"}},
		{Finding: apiv1.Finding{Code: "B", Severity: apiv1.SeverityInfo, StatefulSet: "web", Message: "m"}},
	})
	var plain, colored bytes.Buffer
	_ = render.PrintTable(&plain, rep, render.TableOptions{})
	_ = render.PrintTable(&colored, rep, render.TableOptions{Color: true})
	if bytes.Equal(plain.Bytes(), colored.Bytes()) || !bytes.Contains(colored.Bytes(), []byte("\x1b[31merror\x1b[0m")) {
		t.Fatalf("no colour:\n%s", colored.String())
	}
	stripped := bytes.NewBuffer(nil)
	for _, line := range bytes.Split(colored.Bytes(), []byte("\n")) {
		line = bytes.ReplaceAll(line, []byte("\x1b[0m"), nil)
		for _, c := range []string{"\x1b[31m", "\x1b[36m"} {
			line = bytes.ReplaceAll(line, []byte(c), nil)
		}
		stripped.Write(line)
		stripped.WriteByte('\n')
	}
	if got := bytes.TrimRight(stripped.Bytes(), "\n"); !bytes.Equal(got, bytes.TrimRight(plain.Bytes(), "\n")) {
		t.Errorf("colour changed the layout:\n%s\nvs\n%s", got, plain.String())
	}
}

func TestCountAndSummary(t *testing.T) {
	rep := model.NewReport(false, []apiv1.StatefulSetSummary{{Name: "web", Status: apiv1.StatusStuck}}, []stuck.Finding{
		{Finding: apiv1.Finding{Code: "A", Severity: apiv1.SeverityWarning}},
		{Finding: apiv1.Finding{Code: "B", Severity: apiv1.SeverityError}},
	})
	if rep.Findings[0].Severity != apiv1.SeverityError {
		t.Errorf("errors sort first: %+v", rep.Findings)
	}
	if rep.Count(apiv1.SeverityError) != 1 || rep.Count(apiv1.SeverityWarning) != 2 || rep.Count(apiv1.SeverityInfo) != 2 {
		t.Errorf("counts wrong")
	}
	want := "2 findings (1 error, 1 warning, 0 info) in 1 StatefulSet checked (1 stuck)."
	if got := render.Summary(rep); got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
}
