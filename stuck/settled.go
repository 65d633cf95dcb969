package stuck

import (
	appsv1 "k8s.io/api/apps/v1"

	"github.com/stsdiag/stsdiag/internal/rollout"
	"github.com/stsdiag/stsdiag/stuck/controller"
)

// StatusSettled reports whether the StatefulSet's own status, as the controller last wrote it,
// says the rollout is over: nothing left for the controller to create, replace or wait for.
// Such a set holds no pod the diagnosis could find stuck, so a triaged read may skip its pods,
// claims, revisions and Events — as long as the controller runs (its status is only as fresh
// as its last sync: ControllerManagerLease).
//
// The controller computes the status from its pods in every sync (updateStatus and
// computeReplicaStatus, pkg/controller/statefulset/stateful_set_control.go:374-419@v1.37.2):
// status.replicas counts every created pod, the condemned ones (ordinals past spec.replicas)
// and the terminating ones included; readyReplicas those Running and Ready, terminating or not;
// availableReplicas those Ready for minReadySeconds; currentReplicas and updatedReplicas only
// pods that are not terminating. It writes observedGeneration = generation with the revisions
// (:585-587), and moves currentRevision to updateRevision once every replica is updated, ready
// and created (completeUpdate, stateful_set_utils.go:645-651). So a set is settled when:
//   - it is not being deleted, and its latest spec was observed;
//   - status.replicas = spec.replicas: no pod missing, no condemned pod left;
//   - readyReplicas = availableReplicas = spec.replicas: every pod Ready for minReadySeconds;
//   - updatedReplicas = spec.replicas: every pod on the update revision and none terminating
//     (a terminating pod still counts as created and may count as Ready, never as updated);
//   - currentRevision = updateRevision: no rolling update, partitioned canary or OnDelete update
//     in progress (those are read deep: their old pods matter).
func StatusSettled(set *appsv1.StatefulSet) bool {
	st := set.Status
	n := rollout.Replicas(set)
	return set.DeletionTimestamp == nil && st.ObservedGeneration > 0 && st.ObservedGeneration >= set.Generation &&
		st.Replicas == n && st.ReadyReplicas == n && st.AvailableReplicas == n && st.UpdatedReplicas == n &&
		st.UpdateRevision != "" && st.CurrentRevision == st.UpdateRevision
}

// DiagnoseSettled is Diagnose for StatefulSets whose status is settled (StatusSettled), read
// without their pods, claims, revisions or Events: each set's rollout, and the checks that read
// no pod (the governing Service). For such sets it finds what Diagnose finds with everything
// read.
func DiagnoseSettled(s *Objects, opts Options) Result {
	rules := RulesOrNewest(s.ServerVersion, opts.FeatureGates)
	d := &diagnosis{ix: newIndex(s, opts.Settle), opts: opts, snap: s, rules: rules, views: map[string]*controller.View{}}
	res := Result{Rules: rules, Views: d.views}
	for i := range s.StatefulSets {
		set := &s.StatefulSets[i]
		if !s.InScope(set.Namespace, set.Name) {
			continue
		}
		d.governingService(set)
		res.StatefulSets = append(res.StatefulSets, rolloutOf(set))
	}
	res.Findings = d.findings
	SortFindings(res.Findings)
	return res
}
