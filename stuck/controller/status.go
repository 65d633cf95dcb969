package controller

import (
	appsv1 "k8s.io/api/apps/v1"
)

// What the controller's status says of a rollout, read from the StatefulSet alone.

// Partition is the rolling update's partition, 0 when unset (the API default:
// pkg/apis/apps/v1/defaults.go:106-119@v1.37.2); the update strategy decides whether it applies.
func Partition(set *appsv1.StatefulSet) int32 {
	if ru := set.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
		return *ru.Partition
	}
	return 0
}

// Replicas is spec.replicas, 1 when unset (the API default).
func Replicas(set *appsv1.StatefulSet) int32 {
	if set.Spec.Replicas != nil {
		return *set.Spec.Replicas
	}
	return 1
}

// StatusComplete reports whether every replica runs the update revision, Ready and available for
// minReadySeconds, with the partition respected and the latest spec observed.
//
// It is stricter than kubectl rollout status (k8s.io/kubectl/pkg/polymorphichelpers,
// StatefulSetStatusViewer), on purpose: that viewer counts Ready but not available replicas
// (minReadySeconds), calls any RollingUpdate with a rollingUpdate block but no partition
// complete once enough pods are Ready whatever their revision, ignores extra pods still
// terminating (status.replicas), and refuses OnDelete. Here an OnDelete set is complete, like
// any other, only when every replica runs the update revision: its old pods change only when
// someone deletes them. Up to 1.36 the controller never advances currentRevision for OnDelete
// (stateful_set_utils.go:597-604@v1.27.16, :639@v1.36.3; any strategy from
// :645-658@v1.37.2), so updatedReplicas decides there.
func StatusComplete(set *appsv1.StatefulSet) bool {
	st := set.Status
	if st.ObservedGeneration == 0 || st.ObservedGeneration < set.Generation {
		return false
	}
	replicas := Replicas(set)
	if st.Replicas != replicas || st.ReadyReplicas < replicas || st.AvailableReplicas < replicas {
		return false
	}
	if set.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType {
		if p := Partition(set); p > 0 {
			return st.UpdatedReplicas >= replicas-p
		}
	}
	return st.UpdatedReplicas >= replicas && (st.UpdateRevision == st.CurrentRevision || set.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType)
}

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
	n := Replicas(set)
	return set.DeletionTimestamp == nil && st.ObservedGeneration > 0 && st.ObservedGeneration >= set.Generation &&
		st.Replicas == n && st.ReadyReplicas == n && st.AvailableReplicas == n && st.UpdatedReplicas == n &&
		st.UpdateRevision != "" && st.CurrentRevision == st.UpdateRevision
}

// canaryStepsAnnotation is api/v1's AnnotationCanarySteps: the canary stsdiag watch steps.
const canaryStepsAnnotation = "stsdiag.io/canary-steps"

// CanaryUnderWay reports whether stsdiag watch steps the StatefulSet's rollouts (it declares
// apiv1.AnnotationCanarySteps, docs/canary.md) and its canary has not reached every replica yet:
// the update revision is not the current one. The partition watch holds between two steps makes
// the controller's status complete (StatusComplete respects it, as the controller does:
// stateful_set_control.go:744-750@v1.37.2) long before the canary is; the controller makes the
// update revision current once every replica runs it (completeUpdate,
// stateful_set_utils.go:645-651@v1.37.2).
func CanaryUnderWay(set *appsv1.StatefulSet) bool {
	if _, declared := set.Annotations[canaryStepsAnnotation]; !declared || set.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType {
		return false
	}
	st := set.Status
	return st.UpdateRevision != "" && st.UpdateRevision != st.CurrentRevision
}
