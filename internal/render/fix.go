package render

import (
	"fmt"
	"io"
	"strings"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/explain"
	"github.com/stsdiag/stsdiag/internal/model"
)

// DescribeAction is an action as one line of a plan.
func DescribeAction(a model.Action) string {
	switch a.Kind() {
	case apiv1.PatchImage:
		s := fmt.Sprintf("patch statefulset/%s -n %s: container %q image %s → %s", a.StatefulSet, a.Namespace, a.Container, a.From, a.To)
		if note := explain.PatchAdmission(a.Admission); note != "" {
			s += "; " + note
		}
		return s
	case apiv1.DeletePod:
		verb := "delete"
		if a.Disruption == apiv1.DisruptionEvict {
			verb = "evict"
		}
		if a.AfterPatch {
			return fmt.Sprintf("%s pod/%s -n %s once the patch makes it an old revision (proven again after the patch)", verb, a.Pod, a.Namespace)
		}
		return fmt.Sprintf("%s pod/%s -n %s (uid %s)", verb, a.Pod, a.Namespace, a.UID)
	case apiv1.ForceDeletePod:
		s := fmt.Sprintf("force-delete pod/%s -n %s (uid %s, grace period 0)", a.Pod, a.Namespace, a.UID)
		if a.Result == "" && a.Message != "" {
			s += ": " + a.Message + "; only if a fresh diagnosis still says so"
		}
		return s
	case apiv1.Rollback:
		if a.Rollback == nil {
			break
		}
		images := "no image changes"
		if len(a.Rollback.Images) > 0 {
			var parts []string
			for _, c := range a.Rollback.Images {
				parts = append(parts, fmt.Sprintf("container %q image %s → %s", c.Container, orNone(c.From), orNone(c.To)))
			}
			images = strings.Join(parts, ", ")
		}
		return fmt.Sprintf("roll back statefulset/%s -n %s from failing revision %s to revision %s (its pods are Ready): %s",
			a.StatefulSet, a.Namespace, a.Rollback.FromRevision, a.Rollback.Revision, images)
	}
	return string(a.Kind())
}

// orNone names an image a container does not have on one side of a rollback.
func orNone(image string) string {
	if image == "" {
		return "(none)"
	}
	return image
}

// ActionLine is one applied action: its result, what it was and what happened.
func ActionLine(a model.Action) string {
	return fmt.Sprintf("%-8s %s: %s", a.Result, DescribeAction(a), a.Message)
}

// Plan prints the planned actions and the error findings left for the user.
func Plan(w io.Writer, r *model.FixResult) {
	if len(r.Actions) == 0 {
		fmt.Fprintln(w, "Nothing stsdiag can repair safely.")
	} else {
		fmt.Fprintf(w, "Plan (%d action%s):\n", len(r.Actions), plural(len(r.Actions)))
		for i, a := range r.Actions {
			fmt.Fprintf(w, "  %d. %s\n", i+1, DescribeAction(a))
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
