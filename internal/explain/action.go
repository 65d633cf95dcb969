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

// Outcome words what became of an applied action: it sets the action's Message from its
// Outcome (model.Action.Conclude set the Result). These are the public Action's message texts;
// testdata/golden/actions/<reason>.txt locks them.
func Outcome(a *model.Action) {
	a.Message = outcome(a)
}

func outcome(a *model.Action) string {
	o := a.Outcome
	evict := a.Kind() == apiv1.DeletePod && a.Disruption == apiv1.DisruptionEvict
	switch o.Reason {
	case model.OutcomeDone:
		return done(a)
	case model.OutcomeDryRun:
		return "dry run: not sent" + predicted(o.Eviction)
	case model.OutcomeDryRunAfterPatch:
		return "dry run: deleted only if still stuck on the old revision after the patch"
	case model.OutcomeServerDryRunAccepted:
		return "server dry run: the " + request(a) + " would be accepted"
	case model.OutcomeNotProven:
		return "a fresh diagnosis no longer proves it stuck (it recovered, was replaced or its StatefulSet changed); nothing deleted"
	case model.OutcomeNotNeeded:
		if a.Kind() == apiv1.Rollback {
			return "the StatefulSet changed since diagnosis and a fresh diagnosis no longer calls for a rollback; nothing overwritten"
		}
		return "the StatefulSet changed since diagnosis and no longer needs this patch; nothing overwritten"
	case model.OutcomeChangedAgain:
		return "the StatefulSet changed again since diagnosis; nothing overwritten"
	case model.OutcomeGone:
		switch {
		case a.Kind() == apiv1.PatchImage || a.Kind() == apiv1.Rollback:
			return "the StatefulSet no longer exists; nothing patched"
		case evict:
			return "the pod is already gone; nothing evicted"
		}
		return "the pod is already gone; nothing deleted"
	case model.OutcomeReplaced:
		if evict {
			return "the pod was replaced since it was proven stuck; nothing evicted"
		}
		return "the pod was replaced since it was proven stuck; nothing deleted"
	case model.OutcomeForbidden:
		return fmt.Sprintf("forbidden: needs %s %s in namespace %s (see deploy/fix-clusterrole.yaml): %s", o.Verb, o.Resource, a.Namespace, o.Err)
	case model.OutcomeRefusedByBudget:
		var name, message string
		if b := a.DisruptionBudget; b != nil {
			name, message = b.Name, b.Message
		}
		return fmt.Sprintf("eviction refused by PodDisruptionBudget %s (%d %s): %s; nothing deleted (--disruption=delete would delete it regardless of the budget)",
			name, o.Code, strings.ToLower(o.StatusReason), message)
	case model.OutcomeMultipleBudgets:
		return "eviction refused: more than one PodDisruptionBudget selects the pod, which the Eviction API does not support; nothing deleted"
	case model.OutcomeNotPatched:
		return "its StatefulSet was not patched; nothing deleted"
	case model.OutcomeNotObserved:
		return fmt.Sprintf("the StatefulSet controller did not observe the patch within the --wait budget (status.observedGeneration %d, patched generation %d); nothing deleted: a fresh diagnosis is trusted only once the controller has observed the patch",
			o.ObservedGeneration, o.PatchedGeneration)
	case model.OutcomeNotStuckAfterPatch:
		return "not stuck on an old revision after the patch (the controller replaced it or it recovered); nothing deleted"
	case model.OutcomeFailed:
		return o.Err
	case model.OutcomeNotConfirmed:
		return "not confirmed"
	}
	return ""
}

// done is what a change made did.
func done(a *model.Action) string {
	switch a.Kind() {
	case apiv1.PatchImage:
		return "image patched"
	case apiv1.Rollback:
		if a.Rollback == nil {
			return "template rolled back"
		}
		return fmt.Sprintf("template rolled back to revision %s; the pods still on %s are deleted once the controller has observed it and a fresh diagnosis proves them stuck",
			a.Rollback.Revision, a.Rollback.FromRevision)
	case apiv1.ForceDeletePod:
		return "pod force-deleted (grace period 0) from its lost node; the controller recreates it on a healthy node, its PersistentVolumeClaims are kept"
	}
	if a.Disruption == apiv1.DisruptionEvict {
		return "pod evicted (Eviction API, its PodDisruptionBudget allowed it or none selects it); the controller recreates it from the update revision, its PersistentVolumeClaims are kept"
	}
	return "pod deleted; the controller recreates it from the update revision, its PersistentVolumeClaims are kept"
}

// request names the request an action sends.
func request(a *model.Action) string {
	switch {
	case a.Kind() == apiv1.PatchImage:
		return "patch"
	case a.Kind() == apiv1.Rollback:
		return "rollback"
	case a.Kind() == apiv1.DeletePod && a.Disruption == apiv1.DisruptionEvict:
		return "eviction"
	}
	return "delete"
}

// predicted is a client dry run's eviction prediction, after "dry run: not sent".
func predicted(p *model.EvictionPrediction) string {
	switch {
	case p == nil:
		return ""
	case p.Unreadable != "":
		return " (PodDisruptionBudgets unreadable: " + p.Unreadable + ")"
	case p.Allowed:
		return "; the eviction would be accepted: " + Eviction(*p)
	}
	return "; the eviction would be refused: " + Eviction(*p)
}

// Eviction says why the Eviction API would accept or refuse an eviction (the rule of
// EvictionREST.Create that decides it, k8s.io/kubernetes
// pkg/registry/core/pod/storage/eviction.go@v1.37.2).
func Eviction(p model.EvictionPrediction) string {
	switch p.Rule {
	case model.EvictionIgnoresBudget:
		return fmt.Sprintf("a %s pod is deleted without consulting a PodDisruptionBudget", p.PodState)
	case model.EvictionMultipleBudgets:
		return "more than one PodDisruptionBudget selects the pod (500)"
	case model.EvictionNoBudget:
		return "no PodDisruptionBudget selects the pod"
	case model.EvictionUnhealthyAlwaysAllow:
		return fmt.Sprintf("the pod is not Ready and PodDisruptionBudget %s has unhealthyPodEvictionPolicy AlwaysAllow", p.Budget)
	case model.EvictionUnhealthyBudgetHealthy:
		return fmt.Sprintf("the pod is not Ready and PodDisruptionBudget %s is healthy (%d healthy, %d needed)", p.Budget, p.CurrentHealthy, p.DesiredHealthy)
	case model.EvictionBudgetNotObserved:
		return fmt.Sprintf("PodDisruptionBudget %s is still being processed by the server (429)", p.Budget)
	case model.EvictionBudgetNegative:
		return fmt.Sprintf("PodDisruptionBudget %s allows a negative number of disruptions (403)", p.Budget)
	case model.EvictionBudgetExhausted:
		return fmt.Sprintf("PodDisruptionBudget %s needs %d healthy pods and has %d currently (429)", p.Budget, p.DesiredHealthy, p.CurrentHealthy)
	case model.EvictionBudgetAllows:
		return fmt.Sprintf("PodDisruptionBudget %s allows %d disruption(s)", p.Budget, p.DisruptionsAllowed)
	}
	return string(p.Rule)
}
