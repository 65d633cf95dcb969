package render

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/explain"
	"github.com/stsdiag/stsdiag/internal/text"
)

// Explanation prints explain's document in the format of the -o flags. now dates the waits.
func Explanation(w io.Writer, e *apiv1.Explanation, flags *PrintFlags, now time.Time) error {
	if flags.OutputFormat == FormatHTML {
		return ExplanationHTML(w, e, now)
	}
	if !flags.Human() {
		return flags.PrintDocument(e, w)
	}
	return ExplanationTable(w, e, now)
}

// nextWords says a step as people read it.
var nextWords = map[string]string{
	apiv1.StepNothing:           "nothing",
	apiv1.StepCreate:            "create the pod",
	apiv1.StepRecreateTerminal:  "delete and recreate it (it exited)",
	apiv1.StepWaitRunning:       "wait for Running",
	apiv1.StepWaitReady:         "wait for Ready",
	apiv1.StepWaitAvailable:     "wait for Available (minReadySeconds)",
	apiv1.StepWaitTerminated:    "wait until it is gone",
	apiv1.StepDeleteToUpdate:    "delete it to update it",
	apiv1.StepDeleteToScaleDown: "delete it (scale down)",
	apiv1.StepWaitManualDelete:  "nothing: replaced only when deleted",
	apiv1.StepNotReached:        "not reached (an earlier ordinal holds)",
}

// ExplanationTable writes the header (rules, revisions, template changes), one row per
// ordinal with the one that holds the controller marked ►, and the verdict.
func ExplanationTable(w io.Writer, e *apiv1.Explanation, now time.Time) error {
	fmt.Fprintf(w, "StatefulSet %s/%s: %s, %s, %d replica%s", e.Namespace, e.StatefulSet, e.PodManagementPolicy, e.UpdateStrategy, e.Replicas, plural(int(e.Replicas)))
	if e.Partition > 0 {
		fmt.Fprintf(w, ", partition %d", e.Partition)
	}
	if e.MinReadySeconds > 0 {
		fmt.Fprintf(w, ", minReadySeconds %d", e.MinReadySeconds)
	}
	fmt.Fprintf(w, " — %s\n", e.Status)
	if e.Server != nil {
		fmt.Fprintf(w, "Controller rules: Kubernetes %s%s\n", e.Server.Rules, gates(e.Server.AssumedFeatureGates))
	}
	fmt.Fprintf(w, "Revisions: current %s, update %s\n", dash(e.CurrentRevision), dash(e.UpdateRevision))
	if len(e.TemplateChanges) > 0 {
		fmt.Fprintf(w, "Template changes %s → %s:\n", e.CurrentRevision, e.UpdateRevision)
		for _, c := range e.TemplateChanges {
			fmt.Fprintf(w, "  %s\n", c)
		}
	}
	fmt.Fprintln(w)
	table := &metav1.Table{ColumnDefinitions: []metav1.TableColumnDefinition{
		{Name: "", Type: "string"}, {Name: "Ordinal", Type: "integer"}, {Name: "Pod", Type: "string"},
		{Name: "Revision", Type: "string"}, {Name: "State", Type: "string"}, {Name: "Next", Type: "string"},
		{Name: "Waiting", Type: "string"}, {Name: "Why", Type: "string"},
	}}
	var holding, deadlines []string
	for _, o := range e.Ordinals {
		mark, waiting := "", ""
		if o.Holds {
			mark = "►"
			holding = append(holding, o.Pod)
		}
		if o.Since != nil && o.Holds {
			waiting = now.Sub(o.Since.Time).Round(time.Second).String()
		}
		next := nextWords[o.Next]
		if next == "" {
			next = o.Next
		}
		why := o.Why
		if why == "" && o.ExpectedBy != nil {
			why = explain.Expected(o.Expected, o.ExpectedBy.Time, now)
			deadlines = append(deadlines, o.Pod+" "+why)
		}
		table.Rows = append(table.Rows, metav1.TableRow{Cells: []any{mark, int64(o.Ordinal), o.Pod, dash(o.Revision), o.State, next, dash(waiting), dash(text.OneLine(why))}})
	}
	rendered, err := formatTable(table, false)
	if err != nil {
		return err
	}
	if _, err := w.Write(rendered); err != nil {
		return err
	}
	fmt.Fprintln(w)
	for _, f := range e.Findings {
		fmt.Fprintf(w, "%s %s %s: %s\n  remedy: %s\n", f.Severity, f.Code, dash(f.Pod), text.OneLine(f.Message), text.OneLine(f.Remedy))
	}
	_, err = fmt.Fprintln(w, verdict(e, holding))
	for _, d := range deadlines {
		fmt.Fprintf(w, "  %s\n", d)
	}
	return err
}

func verdict(e *apiv1.Explanation, holding []string) string {
	switch {
	case e.Status == apiv1.StatusStuck && len(holding) == 0:
		return "Stuck: see the findings."
	case e.Status == apiv1.StatusStuck:
		return fmt.Sprintf("Stuck: the controller cannot go on past %s by itself.", strings.Join(holding, ", "))
	case len(holding) > 0:
		return fmt.Sprintf("%s: the controller waits on %s, which is expected to change by itself.", e.Status, strings.Join(holding, ", "))
	}
	return fmt.Sprintf("%s: the controller has nothing left to wait for.", e.Status)
}

func gates(g map[string]bool) string {
	var on []string
	for name, enabled := range g {
		on = append(on, fmt.Sprintf("%s=%t", name, enabled))
	}
	if len(on) == 0 {
		return ""
	}
	sort.Strings(on)
	return " (" + strings.Join(on, ", ") + ")"
}
