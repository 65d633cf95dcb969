// Package render prints what the commands produce: the tables people read, and the stsdiag/v1
// documents through cli-runtime's JSON and YAML printers (one -o vocabulary), JUnit and GitHub
// annotations.
package render

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/printers"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/text"
	"github.com/stsdiag/stsdiag/stuck"
)

// TableOptions controls the human-readable table.
type TableOptions struct {
	Wide          bool
	WithNamespace bool
	// WithContext adds the kubeconfig context (several clusters checked).
	WithContext bool
	Color       bool
	// Explanations (by "namespace/name", from the same diagnosis as the report) draw each
	// StatefulSet's ordinals in -o html; Now dates the page and its waits.
	Explanations map[string]*apiv1.Explanation
	Now          time.Time
}

// Report prints a check report in the format of the -o flags.
func Report(w io.Writer, r *model.Report, flags *PrintFlags, opts TableOptions) error {
	switch {
	case flags.OutputFormat == FormatHTML:
		return ReportHTML(w, r, opts.Explanations, opts.Now)
	case flags.OutputFormat == FormatName:
		return stuckNames(w, r)
	case !flags.Human():
		return flags.PrintDocument(r.Public(), w)
	}
	opts.Wide = flags.OutputFormat == FormatWide
	return PrintTable(w, r, opts)
}

// FleetReport is Report for a fleet: the document also lists the members and says whether it
// is partial (a member could not be checked); the table and the page are Report's.
func FleetReport(w io.Writer, r *model.Report, members []apiv1.FleetMember, flags *PrintFlags, opts TableOptions) error {
	if flags.OutputFormat == FormatHTML || flags.OutputFormat == FormatName || flags.Human() {
		return Report(w, r, flags, opts)
	}
	doc := r.Public()
	doc.Clusters = append([]apiv1.FleetMember(nil), members...)
	for _, m := range members {
		doc.Partial = doc.Partial || m.Error != ""
	}
	return flags.PrintDocument(doc, w)
}

// FormatName (check -o name) prints, as kubectl's -o name does, statefulset.apps/NAME for each
// StatefulSet whose status is Stuck (an error finding), one a line; nothing when none is.
const FormatName = "name"

func stuckNames(w io.Writer, r *model.Report) error {
	for _, s := range r.StatefulSets {
		if s.Status == apiv1.StatusStuck {
			if _, err := fmt.Fprintf(w, "statefulset.apps/%s\n", s.Name); err != nil {
				return err
			}
		}
	}
	return nil
}

// PrintTable writes one row per finding, severity first, then a one-line summary.
func PrintTable(w io.Writer, r *model.Report, opts TableOptions) error {
	text, err := findingsTable(r, opts)
	if err != nil {
		return err
	}
	if _, err := w.Write(text); err != nil {
		return err
	}
	if len(r.Findings) > 0 {
		fmt.Fprintln(w)
	}
	PreviousLogs(w, r.Findings)
	for _, warning := range r.Warnings {
		fmt.Fprintf(w, "Warning: %s\n", warning)
	}
	_, err = fmt.Fprintln(w, Summary(r))
	return err
}

// findingsTable lays out one row per finding, severity first (coloured on a terminal).
func findingsTable(r *model.Report, opts TableOptions) ([]byte, error) {
	table := &metav1.Table{ColumnDefinitions: []metav1.TableColumnDefinition{
		{Name: "Severity", Type: "string"},
		{Name: "Code", Type: "string"},
	}}
	if opts.WithContext {
		table.ColumnDefinitions = append(table.ColumnDefinitions, metav1.TableColumnDefinition{Name: "Context", Type: "string"})
	}
	if opts.WithNamespace {
		table.ColumnDefinitions = append(table.ColumnDefinitions, metav1.TableColumnDefinition{Name: "Namespace", Type: "string"})
	}
	table.ColumnDefinitions = append(table.ColumnDefinitions,
		metav1.TableColumnDefinition{Name: "StatefulSet", Type: "string"},
		metav1.TableColumnDefinition{Name: "Pod", Type: "string"},
		metav1.TableColumnDefinition{Name: "Revision", Type: "string", Priority: 1},
		metav1.TableColumnDefinition{Name: "Reason", Type: "string", Priority: 1},
		metav1.TableColumnDefinition{Name: "Message", Type: "string"},
		metav1.TableColumnDefinition{Name: "Remedy", Type: "string"},
	)
	for _, f := range r.Findings {
		cells := []any{string(f.Severity), f.Code}
		if opts.WithContext {
			cells = append(cells, f.Context)
		}
		if opts.WithNamespace {
			cells = append(cells, f.Namespace)
		}
		revision := ""
		if f.Details.PodRevision != nil {
			revision = *f.Details.PodRevision
		}
		message := f.Short
		if message == "" {
			message = f.Message
		}
		cells = append(cells, f.StatefulSet, dash(f.Pod), dash(revision), dash(f.Reason), text.OneLine(message), text.OneLine(f.Remedy))
		table.Rows = append(table.Rows, metav1.TableRow{Cells: cells})
	}
	text, err := formatTable(table, opts.Wide)
	if err != nil {
		return nil, err
	}
	return colorizeRows(text, opts.Color), nil
}

// Summary is the one-line verdict printed under the table.
func Summary(r *model.Report) string {
	bySeverity := map[apiv1.Severity]int{}
	for _, f := range r.Findings {
		bySeverity[f.Severity]++
	}
	byStatus := map[apiv1.RolloutStatus]int{}
	for _, s := range r.StatefulSets {
		byStatus[s.Status]++
	}
	var states []string
	for _, st := range []apiv1.RolloutStatus{apiv1.StatusStuck, apiv1.StatusProgressing, apiv1.StatusTerminating, apiv1.StatusComplete} {
		if byStatus[st] > 0 {
			states = append(states, fmt.Sprintf("%d %s", byStatus[st], strings.ToLower(string(st))))
		}
	}
	sets := fmt.Sprintf("%d StatefulSet%s checked", len(r.StatefulSets), plural(len(r.StatefulSets)))
	if len(states) > 0 {
		sets += " (" + strings.Join(states, ", ") + ")"
	}
	if len(r.Findings) == 0 {
		return "No findings: " + sets + "."
	}
	return fmt.Sprintf("%d finding%s (%d error%s, %d warning%s, %d info) in %s.",
		len(r.Findings), plural(len(r.Findings)),
		bySeverity[apiv1.SeverityError], plural(bySeverity[apiv1.SeverityError]),
		bySeverity[apiv1.SeverityWarning], plural(bySeverity[apiv1.SeverityWarning]),
		bySeverity[apiv1.SeverityInfo], sets)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// colorizeRows colours the severity that starts each row. It runs after alignment (the table
// printer escapes control characters inside cells).
func colorizeRows(table []byte, enabled bool) []byte {
	if !enabled {
		return table
	}
	colors := map[string]string{string(apiv1.SeverityError): "31", string(apiv1.SeverityWarning): "33", string(apiv1.SeverityInfo): "36"}
	lines := bytes.Split(table, []byte("\n"))
	for i, line := range lines {
		word, rest, _ := bytes.Cut(line, []byte(" "))
		if code, ok := colors[string(word)]; ok && i > 0 {
			lines[i] = append([]byte("\x1b["+code+"m"+string(word)+"\x1b[0m "), rest...)
		}
	}
	return bytes.Join(lines, []byte("\n"))
}

// PreviousLogs prints the previous logs check --logs read, under the findings they belong to.
func PreviousLogs(w io.Writer, findings []stuck.Finding) {
	printed := map[string]bool{}
	for _, f := range findings {
		key := f.Namespace + "/" + f.Pod + "/" + f.Container
		if len(f.Details.Logs) == 0 || printed[key] {
			continue
		}
		printed[key] = true
		fmt.Fprintf(w, "Previous log of pod %s container %s (last %d lines):\n", f.Pod, f.Container, len(f.Details.Logs))
		for _, line := range f.Details.Logs {
			fmt.Fprintf(w, "  %s\n", line)
		}
	}
}

// formatTable lays a table out with kubectl's table printer.
func formatTable(table *metav1.Table, wide bool) ([]byte, error) {
	var buf bytes.Buffer
	tw := printers.GetNewTabWriter(&buf)
	if err := printers.NewTablePrinter(printers.PrintOptions{Wide: wide}).PrintObj(table, tw); err != nil {
		return nil, err
	}
	if err := tw.Flush(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
