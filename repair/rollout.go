package repair

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

	"github.com/stsdiag/stsdiag/stuck"
)

// ErrRolloutTimeout means a rollout did not complete before the deadline.
var ErrRolloutTimeout = errors.New("timed out waiting for the rollout")

// WaitRollout follows one StatefulSet with a watch until its rollout is complete (every replica
// Ready and available on the update revision), writing one line per change of its status.
func WaitRollout(ctx context.Context, kube kubernetes.Interface, namespace, name string, out io.Writer) error {
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
		return stuck.RolloutComplete(set), nil
	})
	if err != nil && (errors.Is(ctx.Err(), context.DeadlineExceeded) || wait.Interrupted(err)) {
		return fmt.Errorf("%w of statefulset %s/%s (%s)", ErrRolloutTimeout, namespace, name, last)
	}
	return err
}

// Progress is one line about a StatefulSet's rollout, like kubectl rollout status.
func Progress(set *appsv1.StatefulSet) string {
	replicas := int32(1)
	if set.Spec.Replicas != nil {
		replicas = *set.Spec.Replicas
	}
	st := set.Status
	if stuck.RolloutComplete(set) {
		return fmt.Sprintf("statefulset %s/%s: rollout complete: %d of %d pods ready on revision %s", set.Namespace, set.Name, st.ReadyReplicas, replicas, st.UpdateRevision)
	}
	if st.ObservedGeneration < set.Generation {
		return fmt.Sprintf("statefulset %s/%s: waiting for the controller to observe generation %d", set.Namespace, set.Name, set.Generation)
	}
	return fmt.Sprintf("statefulset %s/%s: %d of %d pods ready, %d updated to revision %s", set.Namespace, set.Name, st.ReadyReplicas, replicas, st.UpdatedReplicas, st.UpdateRevision)
}
