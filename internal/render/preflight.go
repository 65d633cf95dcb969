package render

import (
	"fmt"
	"io"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/text"
	"github.com/stsdiag/stsdiag/stuck"
)

// Preflight prints preflight's answer in the format of the -o flags: the document, JUnit, or
// the StatefulSets (what each apply does) and under them the findings, as check's table.
func Preflight(w io.Writer, p *model.Preflight, flags *PrintFlags, color bool, elapsed time.Duration) error {
	switch {
	case flags.OutputFormat == FormatJUnit:
		return WritePreflightJUnit(w, p, elapsed)
	case !flags.Human():
		return flags.PrintDocument(p.Public(), w)
	}
	table := &metav1.Table{ColumnDefinitions: []metav1.TableColumnDefinition{
		{Name: "Namespace", Type: "string"},
		{Name: "StatefulSet", Type: "string"},
		{Name: "Change", Type: "string"},
		{Name: "Revision", Type: "string"},
		{Name: "Source", Type: "string", Priority: 1},
		{Name: "Verdict", Type: "string"},
		{Name: "Message", Type: "string"},
	}}
	for _, s := range p.StatefulSets {
		table.Rows = append(table.Rows, metav1.TableRow{Cells: []any{s.Namespace, s.Name, string(s.Change), dash(s.UpdateRevision),
			dash(s.Source), string(s.Status), text.OneLine(s.Message)}})
	}
	text, err := formatTable(table, flags.OutputFormat == FormatWide)
	if err != nil {
		return err
	}
	if _, err := w.Write(text); err != nil {
		return err
	}
	if len(p.Findings) > 0 {
		fmt.Fprintln(w)
		rep := &model.Report{Findings: p.Findings}
		findings, err := findingsTable(rep, TableOptions{WithNamespace: true, Color: color, Wide: flags.OutputFormat == FormatWide})
		if err != nil {
			return err
		}
		if _, err := w.Write(findings); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	for _, warning := range p.Warnings {
		fmt.Fprintf(w, "Warning: %s\n", warning)
	}
	_, err = fmt.Fprintln(w, PreflightSummary(p))
	return err
}

// PreflightSummary is the one-line verdict under the table.
func PreflightSummary(p *model.Preflight) string {
	clear := 0
	for _, s := range p.StatefulSets {
		if s.Status == apiv1.PreflightClear {
			clear++
		}
	}
	n := len(p.StatefulSets)
	sets := fmt.Sprintf("%d StatefulSet%s", n, plural(n))
	if p.Result() == apiv1.PreflightClear {
		line := fmt.Sprintf("Clear: the rollouts of %s would finish by themselves", sets)
		if len(p.Findings) > 0 {
			line += fmt.Sprintf(" (%d finding%s to read)", len(p.Findings), plural(len(p.Findings)))
		}
		return line + "."
	}
	return fmt.Sprintf("Would not finish: the rollouts of %d of %s would not finish by themselves.", n-clear, sets)
}

// Preflight writes the annotations of preflight's findings to w and appends its summary.
func (g GitHubActions) Preflight(w io.Writer, p *model.Preflight) error {
	if !g.Enabled {
		return nil
	}
	if err := WriteAnnotations(w, p.Findings); err != nil {
		return err
	}
	return g.appendSummary(func(s io.Writer) error { return StepSummary(s, "stsdiag preflight", PreflightSummary(p), p.Findings) })
}

// WritePreflightJUnit writes one testcase per StatefulSet of the input; a StatefulSet an error
// finding concerns fails, with its findings.
func WritePreflightJUnit(w io.Writer, p *model.Preflight, elapsed time.Duration) error {
	seconds := fmt.Sprintf("%.3f", elapsed.Seconds())
	suite := junitSuite{Name: "stsdiag preflight", Time: seconds}
	for _, s := range p.StatefulSets {
		tc := junitCase{Name: key("", s.Namespace, s.Name), Classname: "stsdiag.preflight", Time: seconds}
		var failing []stuck.Finding
		for _, f := range p.Findings {
			if f.Namespace == s.Namespace && f.StatefulSet == s.Name && f.Blocking() {
				failing = append(failing, f)
			}
		}
		if len(failing) > 0 {
			tc.Failure = findingsFailure(failing, string(apiv1.PreflightWouldNotFinish))
			suite.Failures++
		}
		suite.Cases = append(suite.Cases, tc)
	}
	return writeSuite(w, suite)
}
