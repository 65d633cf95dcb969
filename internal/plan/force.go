package plan

import (
	"k8s.io/apimachinery/pkg/types"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/stuck"
)

// planForceDeletes plans fix --force-lost-node: a ForceDeletePod for each pod stuck terminating
// whose node is gone or has not been Ready for longer than the threshold — the StatefulSet
// documentation's force-delete case. It checks the pod in the snapshot itself: a pod held by
// finalizers, or not there as diagnosed, is never force-deleted, whatever the finding says.
func planForceDeletes(rep *model.Report, o objects) []model.Action {
	var out []model.Action
	for _, f := range rep.Findings {
		if f.Code != apiv1.PodStuckTerminating || f.LostNode == "" || f.Target == nil || o.set(f.Namespace, f.StatefulSet) == nil ||
			!o.forceDeletable(f.Namespace, f.Target) {
			continue
		}
		out = append(out, model.Action{Action: apiv1.Action{Action: apiv1.ForceDeletePod, Namespace: f.Namespace, StatefulSet: f.StatefulSet, Pod: f.Target.Name,
			UID: string(f.Target.UID), Message: "node " + f.LostNode + " is lost"}, Cause: f.Code})
	}
	return out
}

// withoutPods drops the findings of a code about pods the actions repair.
func withoutPods(findings []stuck.Finding, code apiv1.Code, actions []model.Action) []stuck.Finding {
	repaired := map[string]bool{}
	for _, a := range actions {
		repaired[types.NamespacedName{Namespace: a.Namespace, Name: a.Pod}.String()] = true
	}
	var out []stuck.Finding
	for _, f := range findings {
		if f.Code != code || !repaired[types.NamespacedName{Namespace: f.Namespace, Name: f.Pod}.String()] {
			out = append(out, f)
		}
	}
	return out
}
