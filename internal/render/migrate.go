package render

import (
	"fmt"
	"io"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
)

// MigrationPlan prints what migrate found and would do: the fields that differ, the claims that
// grow, the findings and notes, and the steps — or why it refuses.
func MigrationPlan(w io.Writer, r *apiv1.MigrationResult) {
	fmt.Fprintf(w, "StatefulSet %s/%s", r.Namespace, r.StatefulSet)
	if r.SavedCopy != "" {
		fmt.Fprintf(w, ": migration under way, phase %s (saved copy configmap %s)", r.Phase, r.SavedCopy)
	}
	fmt.Fprintln(w)
	if len(r.Changes) > 0 {
		fmt.Fprintln(w, "Changes:")
		for _, c := range r.Changes {
			how := "in place, after the migration"
			if c.Immutable {
				how = "immutable: migrated"
			}
			fmt.Fprintf(w, "  %s: %s → %s (%s)\n", c.Field, orDash(c.From), orDash(c.To), how)
		}
	}
	if len(r.Claims) > 0 {
		fmt.Fprintln(w, "Claims that grow first:")
		for _, c := range r.Claims {
			fmt.Fprintf(w, "  %s: %s → %s\n", c.Name, c.From, c.To)
		}
	}
	if len(r.Findings) > 0 {
		fmt.Fprintln(w, "Findings now:")
		for _, f := range r.Findings {
			pod := ""
			if f.Pod != "" {
				pod = " " + f.Pod
			}
			fmt.Fprintf(w, "  %s %s%s: %s\n", f.Severity, f.Code, pod, f.Message)
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "Note: %s\n", n)
	}
	if len(r.Refusals) > 0 {
		fmt.Fprintln(w, "Refused:")
		for _, ref := range r.Refusals {
			fmt.Fprintf(w, "  - %s: %s\n", ref.Reason, ref.Message)
		}
		return
	}
	if len(r.Steps) > 0 {
		fmt.Fprintf(w, "Plan (%d step%s; pods and claims are never deleted):\n", len(r.Steps), plural(len(r.Steps)))
		for i, s := range r.Steps {
			fmt.Fprintf(w, "  %d. %s\n", i+1, s.Message)
		}
	}
}

// MigrationStep prints one step as it is done, or a wait as it begins.
func MigrationStep(w io.Writer, s apiv1.MigrationStep) {
	switch s.Result {
	case apiv1.ResultDone:
		fmt.Fprintf(w, "done: %s\n", s.Message)
	case apiv1.ResultFailed:
		fmt.Fprintf(w, "failed: %s\n", s.Message)
	default:
		fmt.Fprintln(w, s.Message)
	}
}

// MigrationResult prints the outcome of migrate (or migrate --status) in the format of the -o
// flags: the document, or for people the claims' resize, the proof and the one-line result.
func MigrationResult(w io.Writer, r *apiv1.MigrationResult, flags *PrintFlags) error {
	if !flags.Human() {
		return flags.PrintDocument(r, w)
	}
	for _, c := range r.Claims {
		if c.Result == "" {
			continue
		}
		status := "none reported"
		if len(c.ResizeStatus) > 0 {
			status = fmt.Sprint(c.ResizeStatus)
		}
		fmt.Fprintf(w, "claim %s: request %s → %s, capacity %s, resize %s: %s\n", c.Name, c.From, c.To, orDash(c.Capacity), status, c.Message)
	}
	if p := r.Proof; p != nil && r.Result == apiv1.Migrated {
		for _, pod := range p.Pods {
			line := fmt.Sprintf("pod %s: uid %s, revision %s, owner %s", pod.Name, pod.UID, pod.Revision, pod.Owner)
			if pod.ReplacedBy != "" {
				line += ", replaced by the new StatefulSet's controller with uid " + pod.ReplacedBy
			}
			fmt.Fprintln(w, line)
		}
	}
	_, err := fmt.Fprintf(w, "%s: %s\n", r.Result, r.Message)
	return err
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
