// Package rollout says whether a StatefulSet's rollout is complete, and how far it got. It is
// pure: following a rollout is repair.Follower's job.
package rollout

import (
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/stsdiag/stsdiag/stuck/controller"
)

// ErrTimeout means a rollout did not complete before the deadline (a cancellation is not a
// timeout).
var ErrTimeout = errors.New("timed out waiting for the rollout")

// Progress is one line about a StatefulSet's rollout, like kubectl rollout status.
func Progress(set *appsv1.StatefulSet) string {
	replicas := controller.Replicas(set)
	st := set.Status
	if controller.StatusComplete(set) {
		return fmt.Sprintf("statefulset %s/%s: rollout complete: %d of %d pods ready on revision %s", set.Namespace, set.Name, st.ReadyReplicas, replicas, st.UpdateRevision)
	}
	if st.ObservedGeneration < set.Generation {
		return fmt.Sprintf("statefulset %s/%s: waiting for the controller to observe generation %d", set.Namespace, set.Name, set.Generation)
	}
	return fmt.Sprintf("statefulset %s/%s: %d of %d pods ready, %d updated to revision %s", set.Namespace, set.Name, st.ReadyReplicas, replicas, st.UpdatedReplicas, st.UpdateRevision)
}
