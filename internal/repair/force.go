package repair

import (
	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/model"
)

// PlanForceDeletes plans fix --force-lost-node: a ForceDeletePod for each pod stuck terminating
// whose node is gone or has not been Ready for longer than the threshold — the StatefulSet
// documentation's force-delete case. Pods held by finalizers or on a live node are never
// force-deleted.
func PlanForceDeletes(rep *model.Report) []model.Action {
	var out []model.Action
	for _, f := range rep.Findings {
		if f.Code != apiv1.PodStuckTerminating || f.LostNode == "" || f.Target == nil {
			continue
		}
		out = append(out, model.Action{Action: apiv1.Action{Action: apiv1.ForceDeletePod, Namespace: f.Namespace, StatefulSet: f.StatefulSet, Pod: f.Target.Name,
			UID: string(f.Target.UID), Message: "node " + f.LostNode + " is lost"}, Cause: f.Code})
	}
	return out
}
