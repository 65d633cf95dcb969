package explain

import (
	"fmt"
	"strings"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/model"
)

// Action is an action as one line of a plan (fix's plan, watch's Events and logs).
func Action(a model.Action) string {
	switch a.Kind() {
	case apiv1.PatchImage:
		s := fmt.Sprintf("patch statefulset/%s -n %s: container %q image %s → %s", a.StatefulSet, a.Namespace, a.Container, a.From, a.To)
		if note := PatchAdmission(a.Admission); note != "" {
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
	return fmt.Sprintf("%-8s %s: %s", a.Result, Action(a), a.Message)
}
