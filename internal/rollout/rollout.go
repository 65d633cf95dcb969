// Package rollout says whether a StatefulSet's rollout is complete, and how far it got. It is
// pure: following a rollout is repair.Follower's job.
package rollout

import (
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
)

// ErrTimeout means a rollout did not complete before the deadline (a cancellation is not a
// timeout).
var ErrTimeout = errors.New("timed out waiting for the rollout")

// Progress is one line about a StatefulSet's rollout, like kubectl rollout status.
func Progress(set *appsv1.StatefulSet) string {
	replicas := Replicas(set)
	st := set.Status
	if Complete(set) {
		return fmt.Sprintf("statefulset %s/%s: rollout complete: %d of %d pods ready on revision %s", set.Namespace, set.Name, st.ReadyReplicas, replicas, st.UpdateRevision)
	}
	if st.ObservedGeneration < set.Generation {
		return fmt.Sprintf("statefulset %s/%s: waiting for the controller to observe generation %d", set.Namespace, set.Name, set.Generation)
	}
	return fmt.Sprintf("statefulset %s/%s: %d of %d pods ready, %d updated to revision %s", set.Namespace, set.Name, st.ReadyReplicas, replicas, st.UpdatedReplicas, st.UpdateRevision)
}

// Complete reports whether every replica runs the update revision, Ready and available for
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
func Complete(set *appsv1.StatefulSet) bool {
	st := set.Status
	if st.ObservedGeneration == 0 || st.ObservedGeneration < set.Generation {
		return false
	}
	replicas := Replicas(set)
	if st.Replicas != replicas || st.ReadyReplicas < replicas || st.AvailableReplicas < replicas {
		return false
	}
	if set.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType {
		if ru := set.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil && *ru.Partition > 0 {
			return st.UpdatedReplicas >= replicas-*ru.Partition
		}
	}
	return st.UpdatedReplicas >= replicas && (st.UpdateRevision == st.CurrentRevision || set.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType)
}

// CanaryUnderWay reports whether stsdiag watch steps the StatefulSet's rollouts (it declares
// apiv1.AnnotationCanarySteps, docs/canary.md) and its canary has not reached every replica yet:
// the update revision is not the current one. The partition watch holds between two steps makes
// the controller's status complete (Complete respects it, as the controller does:
// stateful_set_control.go:744-750@v1.37.2) long before the canary is; the controller makes the
// update revision current once every replica runs it (completeUpdate,
// stateful_set_utils.go:645-651@v1.37.2).
func CanaryUnderWay(set *appsv1.StatefulSet) bool {
	if _, declared := set.Annotations[apiv1.AnnotationCanarySteps]; !declared || set.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType {
		return false
	}
	st := set.Status
	return st.UpdateRevision != "" && st.UpdateRevision != st.CurrentRevision
}

// Replicas is spec.replicas, 1 when unset (the API default).
func Replicas(set *appsv1.StatefulSet) int32 {
	if set.Spec.Replicas != nil {
		return *set.Spec.Replicas
	}
	return 1
}
