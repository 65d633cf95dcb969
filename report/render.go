package report

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/printers"
)

// Output formats accepted by -o.
var Formats = []string{"table", "wide", "json", "yaml"}

// TableOptions controls the human-readable table.
type TableOptions struct {
	Wide          bool
	WithNamespace bool
	Color         bool
}

// Print writes the report in the given format.
func Print(w io.Writer, r *Report, format string, opts TableOptions) error {
	switch format {
	case "json":
		return (&printers.JSONPrinter{}).PrintObj(r, w)
	case "yaml":
		return (&printers.YAMLPrinter{}).PrintObj(r, w)
	case "table", "":
		return PrintTable(w, r, opts)
	case "wide":
		opts.Wide = true
		return PrintTable(w, r, opts)
	}
	return fmt.Errorf("unknown output format %q (want one of %s)", format, strings.Join(Formats, ", "))
}

// PrintTable writes one row per finding, severity first, then a one-line summary.
func PrintTable(w io.Writer, r *Report, opts TableOptions) error {
	table := &metav1.Table{ColumnDefinitions: []metav1.TableColumnDefinition{
		{Name: "Severity", Type: "string"},
		{Name: "Code", Type: "string"},
	}}
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
		if opts.WithNamespace {
			cells = append(cells, f.Namespace)
		}
		revision, _ := f.Details["podRevision"].(string)
		message := f.Short
		if message == "" {
			message = f.Message
		}
		cells = append(cells, f.StatefulSet, dash(f.Pod), dash(revision), dash(f.Reason), oneLine(message), oneLine(f.Remedy))
		table.Rows = append(table.Rows, metav1.TableRow{Cells: cells})
	}
	var buf bytes.Buffer
	tw := printers.GetNewTabWriter(&buf)
	if err := printers.NewTablePrinter(printers.PrintOptions{Wide: opts.Wide}).PrintObj(table, tw); err != nil {
		return err
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if _, err := w.Write(colorizeRows(buf.Bytes(), opts.Color)); err != nil {
		return err
	}
	if len(r.Findings) > 0 {
		fmt.Fprintln(w)
	}
	for _, warning := range r.Warnings {
		fmt.Fprintf(w, "Warning: %s\n", warning)
	}
	_, err := fmt.Fprintln(w, Summary(r))
	return err
}

// Summary is the one-line verdict printed under the table.
func Summary(r *Report) string {
	bySeverity := map[Severity]int{}
	for _, f := range r.Findings {
		bySeverity[f.Severity]++
	}
	byStatus := map[string]int{}
	for _, s := range r.StatefulSets {
		byStatus[s.Status]++
	}
	var states []string
	for _, st := range []string{StatusStuck, StatusProgressing, StatusTerminating, StatusComplete} {
		if byStatus[st] > 0 {
			states = append(states, fmt.Sprintf("%d %s", byStatus[st], strings.ToLower(st)))
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
		bySeverity[SeverityError], plural(bySeverity[SeverityError]),
		bySeverity[SeverityWarning], plural(bySeverity[SeverityWarning]),
		bySeverity[SeverityInfo], sets)
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

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// colorizeRows colours the severity that starts each row. It runs after alignment (the table
// printer escapes control characters inside cells).
func colorizeRows(table []byte, enabled bool) []byte {
	if !enabled {
		return table
	}
	colors := map[string]string{string(SeverityError): "31", string(SeverityWarning): "33", string(SeverityInfo): "36"}
	lines := bytes.Split(table, []byte("\n"))
	for i, line := range lines {
		word, rest, _ := bytes.Cut(line, []byte(" "))
		if code, ok := colors[string(word)]; ok && i > 0 {
			lines[i] = append([]byte("\x1b["+code+"m"+string(word)+"\x1b[0m "), rest...)
		}
	}
	return bytes.Join(lines, []byte("\n"))
}
