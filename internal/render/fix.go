package render

import (
	"fmt"
	"io"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/explain"
	"github.com/stsdiag/stsdiag/internal/model"
)

// Plan prints the planned actions and the error findings left for the user.
func Plan(w io.Writer, r *model.FixResult) {
	if len(r.Actions) == 0 {
		fmt.Fprintln(w, "Nothing stsdiag can repair safely.")
	} else {
		fmt.Fprintf(w, "Plan (%d action%s):\n", len(r.Actions), plural(len(r.Actions)))
		for i, a := range r.Actions {
			fmt.Fprintf(w, "  %d. %s\n", i+1, explain.Action(a))
		}
	}
	if len(r.Unrepaired) > 0 {
		fmt.Fprintf(w, "Left for you (no safe automatic repair):\n")
		for _, f := range r.Unrepaired {
			fmt.Fprintf(w, "  - %s %s/%s %s: %s\n", f.Code, f.Namespace, f.StatefulSet, f.Pod, f.Remedy)
		}
	}
}

// FixSummary is the one-line outcome of fix.
func FixSummary(r *model.FixResult) string {
	count := map[apiv1.ActionResult]int{}
	for _, a := range r.Actions {
		count[a.Result]++
	}
	s := fmt.Sprintf("%d action%s: %d done, %d skipped, %d failed; %d finding%s left unrepaired",
		len(r.Actions), plural(len(r.Actions)), count[apiv1.ResultDone], count[apiv1.ResultSkipped], count[apiv1.ResultFailed],
		len(r.Unrepaired), plural(len(r.Unrepaired)))
	if r.DryRun != "" && r.DryRun != apiv1.DryRunNone {
		s += " (dry run: " + string(r.DryRun) + ")"
	}
	if r.Rollout != "" {
		s += "; rollout " + string(r.Rollout)
	}
	return s + "."
}

// FixResult prints the outcome of fix in the format of the -o flags (the plan and each action
// were already printed as they happened in the human formats).
func FixResult(w io.Writer, r *model.FixResult, flags *PrintFlags) error {
	if !flags.Human() {
		return flags.PrintDocument(r.Public(), w)
	}
	_, err := fmt.Fprintln(w, FixSummary(r))
	return err
}
