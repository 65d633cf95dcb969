package repair

import (
	apiv1 "github.com/stsdiag/stsdiag/api/v1"
)

// PlanForceDeletes plans fix --force-lost-node: a ForceDeletePod for each pod stuck terminating
// whose node is gone or has not been Ready for longer than the threshold — the StatefulSet
// documentation's force-delete case. Pods held by finalizers or on a live node are never
// force-deleted.
func PlanForceDeletes(rep *apiv1.Report) []apiv1.Action {
	var out []apiv1.Action
	for _, f := range rep.Findings {
		if f.Code != apiv1.PodStuckTerminating || f.LostNode == "" || f.Target == nil {
			continue
		}
		out = append(out, apiv1.Action{Action: apiv1.ForceDeletePod, Namespace: f.Namespace, StatefulSet: f.StatefulSet, Pod: f.Target.Name,
			UID: string(f.Target.UID), Message: "node " + f.LostNode + " is lost"})
	}
	return out
}
