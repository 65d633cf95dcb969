// Package rollout says whether a StatefulSet's rollout is complete and follows one until it is.
package rollout

import (
	"context"
	"errors"
	"fmt"
	"io"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// ErrTimeout means a rollout did not complete before the deadline.
var ErrTimeout = errors.New("timed out waiting for the rollout")

// Wait follows one StatefulSet with a watch until its rollout is complete (every replica
// Ready and available on the update revision), writing one line per change of its status.
func Wait(ctx context.Context, kube kubernetes.Interface, namespace, name string, out io.Writer) error {
	selector := fields.OneTermEqualSelector("metadata.name", name).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = selector
			return kube.AppsV1().StatefulSets(namespace).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = selector
			return kube.AppsV1().StatefulSets(namespace).Watch(ctx, o)
		},
	}
	last := ""
	_, err := watchtools.UntilWithSync(ctx, lw, &appsv1.StatefulSet{}, nil, func(ev watch.Event) (bool, error) {
		if ev.Type == watch.Deleted {
			return false, fmt.Errorf("statefulset %s/%s was deleted", namespace, name)
		}
		set, ok := ev.Object.(*appsv1.StatefulSet)
		if !ok {
			return false, nil
		}
		line := Progress(set)
		if line != last {
			fmt.Fprintln(out, line)
			last = line
		}
		return Complete(set), nil
	})
	if err != nil && (errors.Is(ctx.Err(), context.DeadlineExceeded) || wait.Interrupted(err)) {
		return fmt.Errorf("%w of statefulset %s/%s (%s)", ErrTimeout, namespace, name, last)
	}
	return err
}

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

// Replicas is spec.replicas, 1 when unset (the API default).
func Replicas(set *appsv1.StatefulSet) int32 {
	if set.Spec.Replicas != nil {
		return *set.Spec.Replicas
	}
	return 1
}
